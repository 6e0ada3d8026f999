"""Type stubs of the Rust extension module (python/src/lib.rs)."""

__version__: str

class TraceError(ValueError):
    """The input could not be read: missing, truncated, not a trace, or corrupt."""

    path: str
    offset: int | None
    reason: str

class NativeReport:
    @property
    def ncu_alone(self) -> bool: ...
    def json(self) -> str: ...
    def html(self, top: int) -> str: ...
    def markdown(self, top: int) -> str: ...
    def summary(self, width: int) -> str: ...
    def csv_columns(self, view: str) -> list[str]: ...

def analyze(
    path: str,
    *,
    steps: str | None = None,
    time: str | None = None,
    focus: str | None = None,
    all_steps: bool = False,
    ncu: str | None = None,
    threads: int | None = None,
    jobs: int | None = None,
    rank: int | None = None,
    allow_truncated: bool = False,
) -> NativeReport: ...

class NativeComparison:
    def json(self) -> str: ...
    def html(self, top: int) -> str: ...
    def markdown(self, top: int) -> str: ...
    def table(self, top: int) -> str: ...

def diff(
    before: str | NativeReport | list[str | NativeReport],
    after: str | NativeReport | list[str | NativeReport],
    *,
    steps: str | None = None,
    time: str | None = None,
    focus: str | None = None,
    all_steps: bool = False,
    threads: int | None = None,
    max_regression: float | None = None,
    budget: str | None = None,
    check: bool = False,
    sequential: bool = False,
) -> NativeComparison: ...
def cli(argv: list[str]) -> int: ...
def summarize(
    path: str,
    *,
    name: str | None = None,
    steps: str | None = None,
    time: str | None = None,
    focus: str | None = None,
    all_steps: bool = False,
    threads: int | None = None,
    allow_truncated: bool = False,
) -> str: ...

class NativeMerger:
    def __init__(self, *, rank: int | None = None) -> None: ...
    def add(self, summary: str) -> None: ...
    def summary(self) -> str: ...
    def report(self, jobs: int) -> NativeReport: ...
