"""The server's settings: one typed, frozen object, read once at the entry point.

Every setting comes from a command-line flag, a `BLITZ_*` environment variable, a TOML file
or its default, in that order of precedence. `SETTINGS` is the one table of them; the CLI's
flags, `blitz config` and the README's table are made from it. Only the entry point calls
`load_settings`: nothing deeper in the code may read `os.environ`; it receives `Settings`
(or the single values it needs) as keyword arguments.
"""

from blitz.config.hidden import hidden_paths, refused_bind
from blitz.config.loading import CONFIG_ENV, Resolved, SettingsError, load_settings, resolve
from blitz.config.render import effective_toml, markdown_table
from blitz.config.settings import LogFormat, LogLevel, Settings
from blitz.config.table import SETTINGS, SettingSpec

__all__ = [
    "CONFIG_ENV",
    "SETTINGS",
    "LogFormat",
    "LogLevel",
    "Resolved",
    "SettingSpec",
    "Settings",
    "SettingsError",
    "effective_toml",
    "hidden_paths",
    "load_settings",
    "markdown_table",
    "refused_bind",
    "resolve",
]
