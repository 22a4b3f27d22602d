"""What reaches a model from Python: the models table (`prefixlint/data/frameworks.toml`), read once.

Each `[[sink]]` row names an API of an LLM client or framework, how a call (or a decorator) of it
is recognised, and which of its arguments carry prompt text and which part of the request each
becomes (`PARTS`, in the order the request puts them). `[[config]]` rows name calls whose
arguments only configure a client (keys, URLs, timeouts): a volatile value passed to them is no
prompt text. `[[source]]` rows name calls whose result is content made per request (retrievers and
vector stores, memory recalled by the input, tools retrieved for the query, web search): a value of
that provenance wherever it lands (prefixlint/python/evaluate/calls.py asks `match_source`).
`[[schema]]` rows name the constructs whose arguments become a generated schema's choices
(`Literal[...]`, `Enum(name, names)`): their order is the schema's (evaluate/schemas.py). A project's
own prompt builders (`[tool.prefixlint.python] sinks`) and sources (`[[...python.source]]`) are rows
of the same table. `[[fields]]` rows name the inputs a component framework declares as data (langflow's
`inputs = [MessageTextInput(name=...)]`), read as `self.<name>`: per request or a constant of the app, by
the class each is declared with. `[[getter]]` rows are the shapes of a config read with a default
(`get(key, default)`, `getattr(obj, key, default)`): a default naming a prompt file is that file
(evaluate/config_reads.py). `[[ordering]]` rows name the arguments that only order or pick what a
call gives (a sort key, an ORDER BY): never its text; and the calls whose result is the same in any
order of what they are given (`max`, `os.path.commonpath`): no order reaches it. `[[settings]]`
rows name the calls that load config files into a settings object read by attribute (Dynaconf,
OmegaConf, EasyDict): a prompt template kept there is that file's text (evaluate/settings.py).
Every row carries a valid and an invalid example that the tests run (`tests/test_frameworks.py`),
as Fixit runs its rules' examples.

The package: rows.py (the row types), names.py (how a call is written, the patterns), lookup.py
(`Frameworks`, the table indexed for matching), table.py (the TOML reader and the row checks).
Nothing here imports libcst until a node is looked at: the prefilter reads the table without it.
"""

from prefixlint.python.frameworks.lookup import Frameworks
from prefixlint.python.frameworks.names import written_chain
from prefixlint.python.frameworks.rows import (
    PARTS,
    AppendedModel,
    ConfigModel,
    EntryModel,
    FieldsModel,
    GetterModel,
    MemoryModel,
    OrderModel,
    RequestModel,
    SchemaModel,
    SettingsModel,
    SinkModel,
    SourceModel,
)
from prefixlint.python.frameworks.table import (
    TableError,
    builtin,
    for_project,
    parse_table,
    sink_from_row,
    source_from_row,
)

__all__ = [
    "PARTS",
    "AppendedModel",
    "ConfigModel",
    "EntryModel",
    "FieldsModel",
    "Frameworks",
    "GetterModel",
    "MemoryModel",
    "OrderModel",
    "RequestModel",
    "SchemaModel",
    "SettingsModel",
    "SinkModel",
    "SourceModel",
    "TableError",
    "builtin",
    "for_project",
    "parse_table",
    "sink_from_row",
    "source_from_row",
    "written_chain",
]
