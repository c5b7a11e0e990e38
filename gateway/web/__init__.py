"""The v1 HTTP API: the FastAPI app, bearer auth, the lean tool-call route, the body limit, serving."""
