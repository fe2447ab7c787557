"""The floor's ClientApp: the weights it receives go back unchanged, with a count for the average."""

from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

app = ClientApp()


@app.train()
def train(message: Message, context: Context) -> Message:
    arrays = message.content.array_records["arrays"]
    content = RecordDict({"arrays": ArrayRecord(arrays.to_numpy_ndarrays()), "metrics": MetricRecord({"n": 1})})
    return Message(content=content, reply_to=message)
