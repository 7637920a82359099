"""The ``gemini`` backend's adapter: one structured-output call on google-genai.

Implements the ``ModelClient`` port. Credentials stay with the SDK, which reads
GEMINI_API_KEY / GOOGLE_API_KEY or the Vertex AI variables from the environment, and the
base URL is passed only when blendmesh is told one (so GOOGLE_GEMINI_BASE_URL works).
Transient errors are retried here with back-off; everything else becomes a ``ModelError``
whose message names the cause but never the prompt or the key.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

from google import genai
from google.genai import errors, types

from services.planner.model.port import ModelError, ModelReply, ModelRequest
from services.planner.model.retry import RetriesExhausted, RetryPolicy, call_with_retries
from services.planner.settings import GeminiSettings

log = logging.getLogger("blendmesh.planner.gemini")

TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})
BLOCKED = frozenset(
    {"SAFETY", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "MODEL_ARMOR"}
)
REFUSED = frozenset(
    {"RECITATION", "LANGUAGE", "OTHER", "MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL"}
)


def _transport_errors() -> tuple[type[BaseException], ...]:
    """Connection and timeout errors of whichever httpx the SDK runs on."""
    found: list[type[BaseException]] = [TimeoutError, ConnectionError]
    for name in ("httpx2", "httpx"):
        try:
            module = __import__(name)
        except ImportError:
            continue
        found.append(module.TransportError)
    return tuple(found)


TRANSPORT_ERRORS = _transport_errors()


def transient(exc: BaseException) -> float | None:
    """None for errors a retry cannot fix, else the least wait the server asked for."""
    if isinstance(exc, errors.APIError):
        return _retry_delay(exc.details) if exc.code in TRANSIENT_STATUS else None
    return 0.0 if isinstance(exc, TRANSPORT_ERRORS) else None


def _retry_delay(details: Any) -> float:
    """The ``google.rpc.RetryInfo`` delay of an error body, e.g. ``"retryDelay": "7s"``."""
    try:
        for item in details["error"]["details"]:
            if str(item.get("@type", "")).endswith("google.rpc.RetryInfo"):
                return float(str(item["retryDelay"]).rstrip("s"))
    except (KeyError, TypeError, ValueError, AttributeError):
        pass
    return 0.0


def model_error(exc: BaseException) -> ModelError:
    """The ModelError for a call that failed for good; the message is safe to show."""
    if isinstance(exc, RetriesExhausted):
        cause = _describe(exc.last)
        return ModelError(
            "unavailable", f"Gemini did not answer after {exc.attempts} attempts ({cause})"
        )
    if isinstance(exc, errors.APIError):
        if exc.code in (401, 403):
            return ModelError("auth", f"Gemini refused the credentials ({_describe(exc)})")
        return ModelError("bad_request", f"Gemini refused the call ({_describe(exc)})")
    return ModelError("unavailable", f"Gemini could not be reached ({_describe(exc)})")


def _describe(exc: BaseException) -> str:
    if isinstance(exc, errors.APIError):
        return f"HTTP {exc.code} {exc.status or ''}".rstrip()
    return type(exc).__name__


class GeminiModel:
    """google-genai's async client, created on first use and closed with the service."""

    def __init__(
        self,
        model: str = "gemini-2.5-flash",
        *,
        temperature: float = 0.0,
        seed: int = 0,
        base_url: str | None = None,
        retry: RetryPolicy | None = None,
        timeout: float = 60.0,
        api_key: str | None = None,  # tests only: otherwise the SDK reads the environment
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self.model = model
        self._temperature = temperature
        self._seed = seed
        self._base_url = base_url
        self._retry = retry or RetryPolicy()
        self._timeout_ms = int(timeout * 1000)
        self._api_key = api_key
        self._sleep, self._clock, self._rng = sleep, clock, rng
        self._client: genai.Client | None = None

    @classmethod
    def from_settings(cls, settings: GeminiSettings) -> GeminiModel:
        return cls(
            settings.model,
            temperature=settings.temperature,
            seed=settings.seed,
            base_url=settings.base_url,
            retry=RetryPolicy(max_retries=settings.max_retries),
        )

    def _sdk(self) -> genai.Client:
        if self._client is None:
            options = types.HttpOptions(timeout=self._timeout_ms)
            if self._base_url:
                options.base_url = self._base_url
            try:
                self._client = genai.Client(api_key=self._api_key, http_options=options)
            except Exception:  # noqa: BLE001 - no key, project or credentials found
                raise ModelError(
                    "auth",
                    "Gemini is not configured where the planner runs: set GEMINI_API_KEY or "
                    "GOOGLE_API_KEY (or GOOGLE_GENAI_USE_VERTEXAI with GOOGLE_CLOUD_PROJECT)",
                ) from None
        return self._client

    async def generate(self, request: ModelRequest) -> ModelReply:
        client = self._sdk()
        config = types.GenerateContentConfig(
            system_instruction=request.system,
            temperature=self._temperature,
            seed=self._seed,
            candidate_count=1,
            response_mime_type="application/json",
            response_json_schema=request.response_schema,
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )
        contents = [
            types.Content(role=turn.role, parts=[types.Part(text=turn.text)])
            for turn in request.contents
        ]

        async def call() -> types.GenerateContentResponse:
            return await client.aio.models.generate_content(
                model=self.model, contents=contents, config=config
            )

        try:
            response = await call_with_retries(
                call,
                self._retry,
                transient,
                sleep=self._sleep,
                clock=self._clock,
                rng=self._rng,
                on_retry=self._log_retry,
            )
        except (RetriesExhausted, errors.APIError) as exc:
            raise model_error(exc) from None
        except Exception as exc:  # noqa: BLE001 - e.g. an answer the SDK cannot read
            raise ModelError("bad_request", f"Gemini call failed ({_describe(exc)})") from None
        return self._reply(response)

    def _log_retry(self, exc: BaseException, retry: int, delay: float) -> None:
        log.warning(
            "gemini %s: %s; retry %d of %d in %.1f s",
            self.model,
            _describe(exc),
            retry,
            self._retry.max_retries,
            delay,
        )

    def _reply(self, response: types.GenerateContentResponse) -> ModelReply:
        feedback = response.prompt_feedback
        if feedback is not None and feedback.block_reason is not None:
            reason = _name(feedback.block_reason)
            raise ModelError("blocked", f"Gemini blocked the request by safety filters ({reason})")
        if not response.candidates:
            raise ModelError("refused", "Gemini returned no answer")
        candidate = response.candidates[0]
        finish = _name(candidate.finish_reason) if candidate.finish_reason else None
        if finish in BLOCKED:
            raise ModelError("blocked", f"Gemini's answer was blocked by safety filters ({finish})")
        if finish in REFUSED:
            raise ModelError("refused", f"Gemini stopped without a plan ({finish})")
        parts = candidate.content.parts if candidate.content and candidate.content.parts else []
        text = "".join(p.text for p in parts if p.text and not p.thought)
        model = response.model_version or self.model
        return ModelReply(text=text, model=model, finish_reason=finish)

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aio.aclose()
            client.close()


def _name(value: Any) -> str:
    return str(getattr(value, "value", value))
