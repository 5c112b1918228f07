"""ARShim statistics logs (ARSHIM_STATS files, schema arshim-stats/1, docs/stats.md) read for use: a bounded regular
file of UTF-8 JSON (files.read_json), then checked against the JSON schema and the few things the schema cannot say,
before any field is used. A log that passes load() has every field the report and the tuner read, of the type they
read it as; anything else is one InputError."""
import functools
import os

from . import files, need
from .text import escape

SCHEMA = "arshim-stats/1"
SCHEMA_FILE_NAME = "arshim-stats-1.schema.json"
HERE = os.path.dirname(os.path.realpath(__file__))
# The schema: in the source tree beside the report script (tools/report/), in an installation in <datadir>/arshim/
# (the package is <datadir>/arshim/tools/arshim/).
SCHEMA_FILES = (os.path.join(HERE, "..", "report", SCHEMA_FILE_NAME), os.path.join(HERE, "..", "..", SCHEMA_FILE_NAME))
LIMIT = 64 << 20
PROBLEM_TEXT = 300  # characters of one problem (jsonschema quotes the offending value)


def schema_file():
    return os.path.normpath(next((p for p in SCHEMA_FILES if os.path.isfile(p)), SCHEMA_FILES[0]))


@functools.lru_cache(maxsize=None)
def validator():
    """The schema's validator, integers strict: jsonschema takes 1.0 for an integer (draft 6 and later), and the
    report shifts and masks bucket bounds as Python ints."""
    jsonschema = need("jsonschema", "python3-jsonschema", "reading statistics logs")
    schema = files.read_json(schema_file(), 1 << 20)
    base = jsonschema.Draft7Validator
    checker = base.TYPE_CHECKER.redefine(
        "integer", lambda _, value: isinstance(value, int) and not isinstance(value, bool))
    return jsonschema.validators.extend(base, type_checker=checker)(schema)


def semantic_problems(doc):
    """What the report relies on beyond the schema (run on a schema-valid log)."""
    if "nodes" in doc["run"] and "ppn" not in doc["run"]:
        yield "$.run: 'nodes' without 'ppn'"
    check = doc["run"].get("startup_check", {})
    if "ranks_without_arshim" in check:  # the job log's findings: counts cover the lists, all_loaded follows them
        for key in ("ranks_without_arshim", "ranks_other_build"):
            if check[key + "_count"] < len(check[key]):
                yield f"$.run.startup_check: {key}_count below the {len(check[key])} ranks listed"
        if check["all_loaded"] != (check["ranks_without_arshim_count"] == 0 and check["ranks_other_build_count"] == 0):
            yield "$.run.startup_check: all_loaded disagrees with the counts of ranks"


def problem_text(error):
    return escape(f"$.{'.'.join(str(p) for p in error.absolute_path)}: {error.message}", PROBLEM_TEXT)


def problems(doc):
    """Every problem of a parsed log, in the order of the fields: schema first, then semantics."""
    errors = sorted(validator().iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    return [problem_text(e) for e in errors] or list(semantic_problems(doc))


def value_text(value):
    if isinstance(value, str):
        return f"'{escape(value, 60)}'"
    return {dict: "an object", list: "an array"}.get(type(value)) or repr(value)  # None, a number or a boolean


def load(path):
    """A statistics log ready for use, or InputError naming the file and its first problem."""
    doc = files.read_json(path, LIMIT)
    found = doc.get("schema") if isinstance(doc, dict) else None
    if found != SCHEMA:
        raise files.InputError(path, f"not an ARShim statistics log (schema {value_text(found)}, expected {SCHEMA!r})")
    first = next(iter(validator().iter_errors(doc)), None)
    problem = problem_text(first) if first else next(semantic_problems(doc), None)
    if problem:
        raise files.InputError(path, f"not a valid {SCHEMA} log: {problem} (arshim report --validate lists every "
                                     "problem)")
    return doc
