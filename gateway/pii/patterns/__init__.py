"""The built-in entities' patterns: one candidate scan over the text (candidates.py), then a validator per family:
emails, IP addresses, IBANs, and digit runs (cards, SSNs, phone numbers, whose metadata phones.py compiles). The
words that make bare digits a phone number or an SSN are in context.py."""
