"""Type stubs of the Rust extension module (python/src/lib.rs)."""

from typing import Optional

__version__: str

class TraceError(ValueError):
    """The input could not be read: missing, truncated, not a trace, or corrupt."""

    path: str
    offset: Optional[int]
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
    steps: Optional[str] = None,
    time: Optional[str] = None,
    focus: Optional[str] = None,
    all_steps: bool = False,
    ncu: Optional[str] = None,
    threads: Optional[int] = None,
    jobs: Optional[int] = None,
    rank: Optional[int] = None,
    allow_truncated: bool = False,
) -> NativeReport: ...
def cli(argv: list[str]) -> int: ...
