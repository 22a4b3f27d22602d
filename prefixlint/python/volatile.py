"""What makes a value volatile: library calls by qualified name, and names of inputs."""

from __future__ import annotations

import re

from prefixlint.python.segments import Provenance

_C, _I, _R, _E, _Q, _U = (
    Provenance.CLOCK,
    Provenance.ID,
    Provenance.RANDOM,
    Provenance.ENVIRONMENT,
    Provenance.REQUEST,
    Provenance.UNORDERED,
)

# Exact qualified names (as libcst's QualifiedNameProvider spells them, whatever the import alias).
# Completion order (tools merged from several MCP servers as each answers): it differs between
# runs. Its items are futures, which `sorted()` cannot order: the fix is `asyncio.gather`, which
# keeps the order it is given, or sorting what they give.
COMPLETION_ORDER = {"asyncio.as_completed", "concurrent.futures.as_completed"}
QUALIFIED: dict[str, Provenance] = {
    **dict.fromkeys(
        [
            "datetime.datetime.now",
            "datetime.datetime.utcnow",
            "datetime.datetime.today",
            "datetime.date.today",
            "time.time",
            "time.time_ns",
            "time.strftime",
            "time.ctime",
            "time.localtime",
            "time.gmtime",
            "time.asctime",
            "pendulum.now",
            "pendulum.today",
            "arrow.now",
            "arrow.utcnow",
            # the clocks of web frameworks and data libraries (timezone-aware `now`)
            "django.utils.timezone.now",
            "pandas.Timestamp.now",
            "pandas.Timestamp.today",
            "pandas.Timestamp.utcnow",
            # interval clocks: meaningless as text, but they differ on every read all the same
            "time.monotonic",
            "time.monotonic_ns",
            "time.perf_counter",
            "time.perf_counter_ns",
            "time.process_time",
        ],
        _C,
    ),
    **dict.fromkeys(
        [
            "secrets.token_hex",
            "secrets.token_urlsafe",
            "secrets.token_bytes",
            "bson.ObjectId",
            "bson.objectid.ObjectId",
        ],
        _I,
    ),
    # A temporary file or folder gets a random name on every call.
    **dict.fromkeys(
        [
            "secrets.choice",
            "secrets.randbelow",
            "secrets.randbits",
            "os.urandom",
            "tempfile.mkdtemp",
            "tempfile.mkstemp",
            "tempfile.mktemp",
        ],
        _R,
    ),
    **dict.fromkeys(
        [
            "os.getpid",
            "os.getppid",
            "os.getcwd",
            "os.getcwdb",
            "os.getlogin",
            "os.uname",
            "os.environ",
            "os.getenv",
            "socket.gethostname",
            "socket.getfqdn",
            "getpass.getuser",
            "pathlib.Path.cwd",
            "pathlib.Path.home",
            "os.path.expanduser",
            "sys.platform",
            "sys.version",
            "sys.executable",
            "tempfile.gettempdir",
            "os.cpu_count",
            "multiprocessing.cpu_count",
            "os.getuid",
            "os.geteuid",
            # the thread that runs the code
            "threading.get_ident",
            "threading.get_native_id",
        ],
        _E,
    ),
    # Filesystem order (per machine, per directory history) and plugin discovery (install order):
    # iterated into a prompt or a tool list, they differ between machines and processes.
    **dict.fromkeys(
        [
            "os.listdir",
            "os.scandir",
            "glob.glob",
            "glob.iglob",
            "importlib.metadata.entry_points",
            "pkgutil.iter_modules",
            "pkgutil.walk_packages",
            # a set of names: its order follows the str hash seed of the process
            "zoneinfo.available_timezones",
            "backports.zoneinfo.available_timezones",
            *sorted(COMPLETION_ORDER),
        ],
        _U,
    ),
}
# Reads of the process environment: the settings of a deployment (`os.getenv("REGION")`,
# `os.environ["REGION"]`, `os.environ.get(...)`), the same on every request of one deployment; what
# identifies the machine itself (hostname, pid, cwd, user) stays per machine.
_ENVIRONMENT_READS = {"os.getenv", "os.getenvb", "os.environ", "os.environb"}


def reads_environment(names: set[str]) -> bool:
    """Whether a call or attribute of these qualified names reads the process environment."""
    return any(n in _ENVIRONMENT_READS or n.startswith(("os.environ.", "os.environb.")) for n in names)


# Listing methods of path objects (`TOOLS_DIR.glob("*.json")`, `Path(d).iterdir()`): filesystem
# order, as `os.listdir`. Only on a receiver known to be a path (`fs.glob()` of fsspec sorts).
PATH_LISTINGS = {"glob", "rglob", "iterdir"}
# What makes a path: its constructors and the methods and operators that keep one a path.
PATH_TYPES = {
    "pathlib.Path",
    "pathlib.PurePath",
    "pathlib.PosixPath",
    "pathlib.WindowsPath",
    "pathlib.Path.cwd",
    "pathlib.Path.home",
    "importlib.resources.files",
}
PATH_METHODS = {"resolve", "absolute", "expanduser", "joinpath", "with_name", "with_suffix", "with_stem"}

# What iterating each unordered source above gives, for its verified fix: "str" items sort as
# they are; "name" items (`os.DirEntry`, `EntryPoint`, `ModuleInfo`) do not compare and sort by
# their `.name`.
UNORDERED_ITEMS: dict[str, str] = {
    "os.listdir": "str",
    "glob.glob": "str",
    "glob.iglob": "str",
    "zoneinfo.available_timezones": "str",
    "backports.zoneinfo.available_timezones": "str",
    "os.scandir": "name",
    "importlib.metadata.entry_points": "name",
    "pkgutil.iter_modules": "name",
    "pkgutil.walk_packages": "name",
}
# Annotations of a collection with no order of its own (`enabled: set[str]`): their iteration
# order follows string hashes, which differ between processes.
SET_TYPES = {
    "set",
    "frozenset",
    "typing.Set",
    "typing.FrozenSet",
    "typing.AbstractSet",
    "typing.MutableSet",
    "collections.abc.Set",
    "collections.abc.MutableSet",
}
# Operations on a set that make a new set (`BASE | EXTRA`, `BASE.union(EXTRA)`): unordered too.
SET_METHODS = {"union", "intersection", "difference", "symmetric_difference", "copy"}
SET_OPERATORS = ("BitOr", "BitAnd", "Subtract", "BitXor")  # libcst operator classes
# Whole modules whose every function is volatile.
MODULES: dict[str, Provenance] = {
    "uuid.": _I,
    # id libraries: every function makes a new id (ULID, short uuids, nanoid)
    "ulid.": _I,
    "shortuuid.": _I,
    "nanoid.": _I,
    "random.": _R,
    "numpy.random.": _R,
    "platform.": _E,
    "os.environ.": _E,
}

# Words in input names (parameters, placeholders, attributes).
_ID_WORDS = {"id", "ids", "uuid", "guid", "nonce"}
_ID_NAMES = {"request", "session", "trace", "user", "uid", "requestid", "sessionid", "traceid", "userid"}
_CLOCK_WORDS = {
    "now",
    "today",
    "utcnow",
    "current_date",
    "current_time",
    "current_datetime",
    "current_timestamp",
}
_DATE_WORDS = {"date", "time", "datetime", "timestamp", "ts", "day", "today", "now"}
_REQUEST_NAMES = {
    "user_input",
    "user_query",
    "user_message",
    "user_question",
    "query",
    "question",
    "user_name",
    "username",
    "retrieved",
    "retrieved_docs",
    "documents",
    "search_results",
    "problem_statement",
    "issue_text",
    "user_request",
    "user_prompt",
    "task_description",
}

_WORD = re.compile(r"[a-z]+|[0-9]+")


def qualified_provenance(names: set[str]) -> Provenance | None:
    """The provenance of a call or attribute given its qualified names, if it is volatile."""
    for name in sorted(names):
        if name in QUALIFIED:
            return QUALIFIED[name]
        for prefix, prov in MODULES.items():
            if name.startswith(prefix):
                return prov
    return None


def name_words(name: str) -> list[str]:
    """The words of an identifier (`researchState`, `research_state`: research, state)."""
    return _words(name)


def _words(name: str) -> list[str]:
    # split snake_case and camelCase alike
    return _WORD.findall(re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower())


def name_provenance(name: str, attribute: bool = False) -> Provenance | None:
    """The provenance an input (parameter, placeholder, attribute) has by its name, if volatile.

    A clock is only assumed when the name says "now"/"current"; a plain `date` is something the
    caller passes, i.e. a request input. For attributes (`config.user`), a bare `user`/`request`
    names an object, not an id."""
    lowered = name.lower().strip("_")
    words = _words(name)
    if not words:
        return None
    if lowered in _CLOCK_WORDS or (words[0] == "current" and set(words[1:]) & _DATE_WORDS):
        return _C
    if words[-1] in _ID_WORDS or (not attribute and lowered.replace("_", "") in _ID_NAMES):
        return _I
    if set(words) & _DATE_WORDS and words[-1] not in {"format", "fmt", "zone", "out", "limit"}:
        return _Q
    if lowered in _REQUEST_NAMES:
        return _Q
    return None


_CLOCK_CALL_WORDS = {"time", "date", "datetime", "timestamp", "now", "today", "clock"}
_CLOCK_CALL_LEADS = {"get", "current", "local", "utc", "now", "today", "fetch", "make", "format"}
_ID_CALL_LEADS = {"new", "generate", "gen", "make", "create", "random", "next", "get"}
_ENV_WORDS = {"hostname", "host", "cwd", "workdir", "platform", "os", "username", "pid", "machine"}


def call_name_provenance(name: str) -> Provenance | None:
    """What a call of a function we cannot read (`get_local_time()`, `current_datetime()`,
    `generate_id()`) returns, judged by its name; at most a warning, as the name may mislead."""
    words = _words(name)
    if not words:
        return None
    if words[-1] in _CLOCK_CALL_WORDS and (len(words) == 1 or words[0] in _CLOCK_CALL_LEADS):
        return _C
    if words[-1] in {"id", "uuid", "guid", "nonce"} and words[0] in _ID_CALL_LEADS:
        return _I
    if len(words) >= 2 and words[0] == "get" and words[-1] in _ENV_WORDS:
        return _E
    return None


def placeholder_provenance(name: str) -> Provenance | None:
    """A template placeholder nobody in the checked code fills: `{current_date}`, `{{time.date}}`,
    `{time_stamp}` say a clock fills them (a finding "named like a date"), ids and machines as for
    inputs."""
    words = _words(name)
    if set(words) & _DATE_WORDS and not set(words) & {"format", "fmt", "zone", "limit", "out"}:
        return _C
    return name_provenance(name.replace(".", "_"))


# Parameters that configure an app (the same on every request): a value passed for them is static.
_CONFIG_WORDS = {
    "system", "instruction", "instructions", "template", "templates", "format",
    "fmt", "name", "names", "role", "persona", "style", "tone", "language", "lang", "model", "schema",
    "tools", "tool", "functions", "function", "examples", "example", "rules", "guidelines",
    "constraints", "directives", "description", "config", "cfg", "settings", "options", "mode", "kind",
    "type", "flag", "enabled", "verbose", "debug", "max", "min", "limit", "size", "count", "num",
    "path", "file", "dir", "folder", "url", "key", "level", "prefix", "suffix", "postfix", "separator", "sep",
    "memory", "memories", "tag", "tags", "state",
    "delimiter", "indent", "width", "agent", "profile", "spec", "version", "llm", "client",
}  # fmt: skip


def parameter_provenance(name: str) -> tuple[Provenance, bool] | None:
    """A parameter read where its caller is not known: volatile by its name (a `request_id`, a
    `query`), else a request input at info (`weak`) unless its name says app configuration."""
    if name in ("self", "cls") or name.startswith("_"):
        return None
    prov = name_provenance(name)
    if prov is not None:
        return prov, False
    words = _words(name)
    if words and words[0] in _PEOPLE:  # customer_name, user_profile: about the person asking
        return _Q, False
    if not words or set(words) & _CONFIG_WORDS:
        return None
    return _Q, True


_PEOPLE = {"user", "customer", "client", "caller", "human", "patient", "student", "visitor", "member"}


PROMPT_WORDS = {"prompt", "prompts", "system", "instruction", "instructions", "preamble", "persona"}
# Attributes that hold prompt text owned by another object (e.g. crewAI's `task.description`).
# Attributes that hold prompt text owned by another object (e.g. crewAI's `task.description`); a
# message's generic `content` is not one: too many objects have it.
PROMPT_ATTRIBUTES = PROMPT_WORDS | {"description", "backstory", "template"}
# Last words that make a prompt-ish name something else: a count, an id, a path, a flag.
_NOT_TEXT = {"tokens", "token", "count", "counts", "len", "length", "id", "ids", "num", "size", "limit",
             "cost", "path", "paths", "file", "dir", "url", "key", "keys", "type", "hash", "index",
             "version", "enabled", "flag", "mode", "ms", "seconds", "names", "name", "dict", "code",
             "uid", "info", "status", "stats", "metadata"}  # fmt: skip
ROLES = {"system", "user", "assistant", "human", "ai", "developer", "tool", "function", "model"}


def builder_role(func_name: str) -> str | None:
    """The role a message builder's name says (`create_user_message` -> "user", "unknown" when it
    names none), or None when it builds no message: a message is what it makes only when
    `message` is the last word of its name (an SDK's type suffix `Param` aside:
    `ChatCompletionUserMessageParam`), so `MessageBlock` (a part of a message's content, as likely
    a reply's as a request's) or `message_to_text` builds none."""
    words = re.findall(r"[a-z]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", func_name).lower())
    if words[-1:] in (["param"], ["params"]):
        words = words[:-1]
    if not words or words[-1] != "message":
        return None
    return next((w for w in words if w in ROLES), "unknown")


def says_prompt(name: str) -> bool:
    """Names like SYSTEM_PROMPT, build_instructions, promptSystem (not `_total_prompt_tokens`)."""
    words = _words(name)
    return bool(set(words) & PROMPT_WORDS) and words[-1] not in _NOT_TEXT


def says_prompt_attribute(name: str) -> bool:
    """`description`, `system_prompt`, `agent_instructions` (not `template_id`, not `content`)."""
    words = _words(name)
    return says_prompt(name) or (bool(words) and words[-1] in PROMPT_ATTRIBUTES)
