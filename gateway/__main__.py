"""`python -m gateway`: the cluster-mode gateway server (gateway/cluster/serve.py)."""

from gateway.cluster.serve import main

if __name__ == "__main__":
    main()
