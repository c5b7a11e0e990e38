"""The resources as pydantic models, a leaf every component imports (the CRDs' twins)."""
