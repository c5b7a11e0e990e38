"""The document formats: each writes one document of its kind (a few KB) from a random source."""

from __future__ import annotations

import random
from collections.abc import Callable

from tests.support.pii_corpus.formats import dev, logs, messages, records
from tests.support.pii_corpus.model import Writer

Format = Callable[[random.Random, Writer], None]

FORMATS: dict[str, Format] = {
    "json_rows": records.json_rows,
    "json_tool_result": records.json_tool_result,
    "csv": records.csv_export,
    "sql_dump": records.sql_dump,
    "ldif": records.ldif,
    "vcard": records.vcard,
    "form_post": records.form_post,
    "access_log": logs.access_log,
    "app_log": logs.app_log,
    "syslog": logs.syslog,
    "stack_trace": logs.stack_trace,
    "email_en": messages.emails_in("en"),
    "email_de": messages.emails_in("de"),
    "email_fr": messages.emails_in("fr"),
    "email_es": messages.emails_in("es"),
    "chat": messages.chat,
    "markdown": messages.markdown_report,
    "html": messages.html_page,
    "source_code": dev.source_code,
    "git_log": dev.git_log,
    "npm_listing": dev.npm_listing,
    "network_config": dev.network_config,
}
