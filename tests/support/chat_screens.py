"""What `blitz chat` shows at its prompts, as regexes the terminal tests wait for."""

KEYS = (
    r"\[o\]nce \[s\]ession \[a\]lways (\[r\]ule )?\[d\]eny \[x\] deny\+stop"
    r" \[e\]dit \[p\]ark › "
)
WRITE_KEYS = (
    r"\[o\]nce \[s\]ession \[a\]lways (\[r\]ule )?\[d\]eny \[x\] deny\+stop"
    r" \[p\]ark › "
)
FOOTER = r"\d+ model calls? · \d+ in · \d+ out · \$0\.0000"

__all__ = ["FOOTER", "KEYS", "WRITE_KEYS"]
