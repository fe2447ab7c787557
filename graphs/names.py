"""The names a run config may use for datasets and partitioners.

Kept free of heavy imports so that a process that only checks a config (the
ServerApp, the CLI's parser) never loads PyTorch Geometric.
"""

PLANETOID = {"cora": "Cora", "citeseer": "CiteSeer", "pubmed": "PubMed"}
DATASETS = ("csbm", *PLANETOID, "cora_ml")
PARTITIONERS = ("louvain", "metis", "label-dirichlet")
