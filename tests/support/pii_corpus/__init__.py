"""A labelled PII corpus for the detection benchmark (tests/bench/pii_detection.py): `build_corpus(seed, size_bytes)`
writes about 1 MB of tool-result text in 22 formats (JSON rows, a raw JSON-RPC result, CSV, SQL, LDIF, vCard, form
posts, access/app/sys logs, stack traces, emails in English, German, French and Spanish, a chat in Japanese, Chinese,
Portuguese and others, markdown, HTML, source code, git logs, npm listings, network configuration). Every PII value
is labelled with its exact span, and numbers, ids and strings a detector may mistake for PII are recorded as
look-alikes with their kind. The same seed gives the same corpus.

Label conventions (what a detector must report for a hit to count as exact):

- A span covers the value as it stands in the text, nothing around it: no quotes, key, `mailto:` or `tel:`, no
  angle brackets, no sentence-final period or comma. Inside an encoding it is the encoded text: `ANA%40X.COM` and
  `%2B49+30+123456` in a form post, `4266+7607+4871+3187` for a card there; full-width digits and no-break spaces
  are part of the span as written.
- In raw JSON text an escape belongs to the JSON, not the value: in `"Contact:\\nana@x.com"` the email is `ana@x.com`.
- EMAIL: local part to domain, whole: `o'connor@example.com`, `ana+news@x.com`, uppercase as written.
- PHONE: from the first digit, `+` (or its encoding `%2B`) or `00` exit code, to the last digit. A `(` opening the
  number's own area code is part of it (`(11) 97147-5065`, `(02) 9374 4000`, `(415) 555-0123`), as is `(0)` after
  a country code (`+49 (0)30 123456`); a bracket around the whole number is not (`(+44 7400 123456)`: the span
  starts at `+`). Nothing after the last digit is: in `+1 713 396 7854\\t#123456` or `..., #123456` the `#123456`
  is an order number (a look-alike), not an extension; the corpus writes no extensions. National digits without
  any separator (`0301234567`) appear only under a phone key (`"phone":`, `TEL;TYPE=CELL:`). The label's country
  is where the number is valid; national forms are written by people of that country.
- CREDIT_CARD: the digits and their separators (`4111 1111 1111 1111`, `3782-822463-10005`), brand IINs only.
- US_SSN: dashed, spaced (`437 68 8725`) or compact (`613288261`), compact only right after an SSN key or word
  (`"ssn": "613288261"`, `SSN is 530141367`): nothing else tells nine digits from any other number.
- IBAN: country code to the last character, spaced in fours or compact, any case (`de89 3704 ...`).
- IP_ADDRESS: the address only: no port, brackets (`[2001:db8::1]:8443`), prefix length (`10.0.0.0/24` labels
  `10.0.0.0`) or zone. A v4-mapped IPv6 address is whole (`::ffff:10.0.0.1`). Subnet masks are look-alikes
  (`255.255.255.0` is a mask, not a host), as are dotted versions, OIDs and build numbers.
"""

from tests.support.pii_corpus.corpus import build_corpus
from tests.support.pii_corpus.model import Corpus, Document, Label, LookAlike

__all__ = ["Corpus", "Document", "Label", "LookAlike", "build_corpus"]
