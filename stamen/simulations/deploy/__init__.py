"""Real deployments: certificates, Flower's SuperLink and SuperNodes with TLS and node auth, test networks."""
