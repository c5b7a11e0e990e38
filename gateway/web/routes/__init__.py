"""The v1 API's routes, one module per area, each a `router(core)`; gateway/web/app.py assembles them."""
