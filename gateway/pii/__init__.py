"""PII detection and tokenization: the model and the sandbox only ever see `[EMAIL_1]`-style tokens."""
