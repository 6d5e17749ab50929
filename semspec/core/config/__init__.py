"""Configuration: pydantic models and the loader of ``.semspec/config.yaml``."""

from semspec.core.config.loader import ConfigProblem, check_config, config_path, load_config
from semspec.core.config.models import SemspecConfig

__all__ = ["ConfigProblem", "SemspecConfig", "check_config", "config_path", "load_config"]
