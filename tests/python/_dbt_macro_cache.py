"""The test session's dbt invocations reuse the macros dbt parsed before.

dbt parses the whole project again whenever it cannot parse partially: when
the `--vars` or the profile's connection settings (the schema among them)
differ from its last invocation with the same target folder. Almost every
test brings its own schema and landing folder, so most of the suite's dbt
invocations parse the whole project, at 4-5 s each on the 2-core machine,
about 60% of it in the macros (dbt's, dbt-spark's and ours: 676 macros,
each parsed, then scanned for the macros it calls). Neither step reads vars
or the schema: a macro's text is parsed, not rendered.

So in this process, a whole-project parse whose macro files (and generic
tests) are the same files with the same checksums as an earlier parse's,
for the same root project (by name), adapter, dispatch settings and
flags, is given
copies of that parse's macros (with the macro dependencies dbt found) instead
of parsing them again; everything else (models, YAML, tests, sources, docs,
vars) is parsed as dbt always does. The project's folder is not part of
the match: a file is named by its project and its path inside the project
(`lakehouse_cdc://macros/...`), and a macro keeps no other path, so the
copies of the project that most tests make (`project_copy`) reuse the
macros of the first. `test_foundation.py` proves that such a parse, in
another folder, gives what a fresh parse of the same inputs gives. dbt's partial
parsing does the same for the macros when it runs: it keeps the saved
manifest's macros whose files did not change.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_MACRO_PARSERS = ("MacroParser", "GenericTestParser")
_parsed: dict[tuple, list[tuple[str, list[dict]]]] = {}
_bypassed = False


@contextmanager
def bypassed() -> Iterator[None]:
    """Parse as dbt does, neither reusing nor recording macros."""
    global _bypassed
    _bypassed = True
    try:
        yield
    finally:
        _bypassed = False


def _key(loader: Any, project_parser_files: dict) -> tuple:
    from dbt.flags import get_flags

    root = loader.root_project
    # (file ids name the project and the path inside it, not the folder)
    files = tuple(
        (file_id, loader.manifest.files[file_id].checksum.checksum)
        for project in sorted(project_parser_files)
        for parser in _MACRO_PARSERS
        for file_id in project_parser_files[project].get(parser, []))
    return (root.project_name, root.credentials.type, repr(root.dispatch),
            bool(getattr(get_flags(), "validate_macro_args", False)), files)


def install() -> None:
    """Wrap dbt's macro parsing step, once per process."""
    from dbt.contracts.graph.nodes import Macro
    from dbt.parser.manifest import ManifestLoader

    parse = ManifestLoader.load_and_parse_macros
    if getattr(parse, "_lakehouse_cached", False):
        return

    def load_and_parse_macros(loader: Any, project_parser_files: dict) -> None:
        # (a partial parse lists only the changed files, whose macros' calls
        # resolve against every macro: such a list is no match)
        if _bypassed or loader.partially_parsing:
            parse(loader, project_parser_files)
            return
        key = _key(loader, project_parser_files)
        parsed = _parsed.get(key)
        if parsed is None:
            parse(loader, project_parser_files)
            files = key[-1]
            _parsed[key] = [(file_id, [loader.manifest.macros[uid].to_dict()
                                       for uid in loader.manifest.files[file_id].macros])
                            for file_id, _ in files]
            return
        for file_id, macros in parsed:
            for macro in macros:
                loader.manifest.add_macro(loader.manifest.files[file_id], Macro.from_dict(macro))
        loader.build_macro_resolver()
        # (dbt scans only the macros made by this parse for the macros they
        # call: the copies carry what the first parse found)
        loader.macro_depends_on()

    load_and_parse_macros._lakehouse_cached = True  # type: ignore[attr-defined]
    ManifestLoader.load_and_parse_macros = load_and_parse_macros
