"""import-linter contract types the built-in ones cannot express.

`stdlib_only`: the sandbox runtime runs inside a bare gVisor rootfs with nothing but CPython, so any
third-party import there is a crash at task start, not a lint nit. The built-in `forbidden` contract
would need every third-party package listed (and kept in step with pyproject); this asks the
interpreter instead (`sys.stdlib_module_names`).
"""

from __future__ import annotations

import sys

from grimp import ImportGraph
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


class StdlibOnlyContract(Contract):
    """The source packages import only the standard library and themselves."""

    type_name = "stdlib_only"

    source_modules = fields.ListField(subfield=fields.ModuleField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        """Find every direct import from the sources whose top-level package is neither stdlib nor a source."""
        roots = {module.root_package_name for module in self.source_modules}
        violations: list[dict[str, str | int | None]] = []
        for source in self.source_modules:
            for importer in sorted(graph.find_descendants(source.name) | {source.name}):
                for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                    top = imported.split(".")[0]
                    if top in roots or top in sys.stdlib_module_names:
                        continue
                    for detail in graph.get_import_details(importer=importer, imported=imported):
                        violations.append({"importer": importer, "imported": imported, "line": detail["line_number"]})
        return ContractCheck(kept=not violations, metadata={"violations": violations})

    def render_broken_contract(self, check: ContractCheck) -> None:
        """One line per offending import, with its place in the source."""
        for violation in check.metadata["violations"]:
            output.print_error(
                f"{violation['importer']} imports {violation['imported']} (l.{violation['line']}), "
                "which is not in the standard library",
                bold=False,
            )
            output.new_line()
