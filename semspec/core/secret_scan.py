"""Secrets in a change: the worker's own secret values and common key shapes, found and masked.

Every diff is scanned before it reaches a reviewer, the console, an event or a commit
(``docs/security.md``, "Secrets in a change"). Two kinds of secret are looked for on each line:

* the worker's own secret values (``semspec.core.masking``: the secret-named variables of its
  environment and the ones named by ``gates.env`` and a role's ``api_key_env``) as they are,
  reversed, in hex and in base64;
* key shapes found by the detectors of ``detect-secrets`` (Yelp's kept library: AWS, Azure,
  GitHub, GitLab, Slack, Stripe, OpenAI, private keys, JWTs and more), called in-process on each
  line through their ``analyze_string``, which never verifies a key over the network.

Left out are the detectors that fire on ordinary code (the high-entropy strings, the keyword
detector, basic-auth URLs, public IP addresses): on the 20,397 lines 400 commits of httpx added
they flagged 174 (test passwords, example URLs, digests), on the 1.96 million lines of this
project's virtual environment 1,779; the detectors in use flagged none and 15 (``BEGIN ...
PRIVATE KEY`` constants, AWS-shaped DNA strings in a test; ``bench/secret_scan_noise.py``).
A finding names its file, line and kind, never the value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import BasePlugin
from detect_secrets.plugins.cloudant import CloudantDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.softlayer import SoftlayerDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from semspec.core.masking import MASK, Masker, named_secrets, worker_masker

DETECTORS: tuple[type[BasePlugin], ...] = (
    ArtifactoryDetector,
    AWSKeyDetector,
    AzureStorageKeyDetector,
    CloudantDetector,
    DiscordBotTokenDetector,
    GitHubTokenDetector,
    GitLabTokenDetector,
    IbmCloudIamDetector,
    IbmCosHmacDetector,
    JwtTokenDetector,
    MailchimpDetector,
    NpmDetector,
    OpenAIDetector,
    PrivateKeyDetector,
    PypiTokenDetector,
    SendGridDetector,
    SlackDetector,
    SoftlayerDetector,
    SquareOAuthDetector,
    StripeDetector,
    TelegramBotTokenDetector,
    TwilioKeyDetector,
)
"""The detect-secrets detectors in use: key shapes, none that fires on ordinary code."""

# The detectors see only the header of a PEM private key; its body lines are masked with it.
_PEM_BLOCK = re.compile(
    r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY( BLOCK)?-----.*?(-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?"
    r"-----|\Z)",
    re.S,
)


@dataclass(frozen=True)
class SecretFinding:
    """A secret on one line of a change: where, and what kind (never the value)."""

    path: str
    line: int
    kind: str
    """``AWS Access Key`` (a detector's name) or ``the value of NAME (base64)``."""

    def where(self) -> str:
        """``path:line``."""
        return f"{self.path}:{self.line}"


class SecretScan:
    """Finds and masks secrets in text: the given secret values and the detectors' shapes."""

    def __init__(self, masker: Masker) -> None:
        self.masker = masker
        self._detectors = [kind() for kind in DETECTORS]

    @classmethod
    def of_worker(cls, names: Iterable[str] = ()) -> SecretScan:
        """The scan of this process's secret values and of the variables ``names``."""
        return cls(worker_masker(names))

    @classmethod
    def of(cls, environ: dict[str, str], names: Iterable[str] = ()) -> SecretScan:
        """The scan of the secret values of ``environ`` (and of ``names`` in it)."""
        return cls(Masker(named_secrets(environ, names)))

    def kinds(self, line: str) -> list[str]:
        """What secrets ``line`` holds, by kind, without the values."""
        kinds = [f"the value of {f.name} ({f.encoding})" for f in self.masker.found(line)]
        for detector in self._detectors:
            if any(True for _ in detector.analyze_string(line)):
                kinds.append(str(detector.secret_type))
        return kinds

    def findings(self, lines: Iterable[tuple[str, int, str]]) -> list[SecretFinding]:
        """The secrets on ``(path, line number, text)`` lines, one finding per kind and line."""
        return [
            SecretFinding(path, number, kind)
            for path, number, text in lines
            for kind in self.kinds(text)
        ]

    def mask(self, text: str) -> str:
        """``text`` with the secret values in every form, credential shapes, the detectors'
        findings and the bodies of private keys replaced by ``MASK``."""
        text = _PEM_BLOCK.sub(MASK, self.masker.mask(text))
        lines = text.split("\n")
        for index, line in enumerate(lines):
            for detector in self._detectors:
                for found in set(detector.analyze_string(line)):
                    if len(found) >= 4:  # a detector's group may be a short word; mask the key
                        line = line.replace(found, MASK)
            lines[index] = line
        return "\n".join(lines)


def findings_text(findings: list[SecretFinding], limit: int = 10) -> str:
    """One line naming where the secrets are (at most ``limit`` places) and of what kind."""
    shown = [f"{f.where()} {f.kind}" for f in findings[:limit]]
    more = f"; and {len(findings) - limit} more" if len(findings) > limit else ""
    return "; ".join(shown) + more
