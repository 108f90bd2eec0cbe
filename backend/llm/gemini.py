"""Gemini through the google-genai SDK: streamed cited answers and completions, retried on 429/5xx."""

from __future__ import annotations

import importlib
import logging
import random
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from backend.config import Settings
from backend.errors import ProviderError
from backend.llm.base import Sampling, SourceText, Tools, ToolSpec, Turn
from backend.llm.parsing import parse_json
from backend.llm.prompts import format_sources, load_prompt
from backend.llm.usage import report_tokens

log = logging.getLogger(__name__)
T = TypeVar("T")

_RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})


def _network_error_types() -> tuple[type[Exception], ...]:
    # The SDK sends through httpx or httpx2, whichever is installed; their errors share no base class.
    found = []
    for module in ("httpx", "httpx2"):
        try:
            found.append(importlib.import_module(module).TransportError)
        except ImportError:
            continue
    return tuple(found)


_NETWORK_ERRORS = _network_error_types()
_FAILURES: tuple[type[Exception], ...] = (genai_errors.APIError, *_NETWORK_ERRORS)


class GeminiLLM:
    """Answers and completions from a Gemini chat model (settings.gemini_chat_model)."""

    generator = "gemini"

    def __init__(
        self,
        settings: Settings,
        *,
        client: genai.Client | None = None,
        backoff_s: float = 0.5,
        max_backoff_s: float = 8.0,
    ) -> None:
        self.name = settings.gemini_chat_model
        self._max_retries = settings.llm_max_retries
        self._backoff_s = backoff_s
        self._max_backoff_s = max_backoff_s
        self._client = client if client is not None else _make_client(settings)
        self._answer_config = types.GenerateContentConfig(
            system_instruction=load_prompt("answer_system").render()
        )

    def answer(
        self,
        question: str,
        sources: Sequence[SourceText],
        history: Sequence[Turn] = (),
        sampling: Sampling | None = None,
    ) -> Iterator[str]:
        """Stream an answer grounded in `sources`, citing them as [n]."""
        prompt = load_prompt("answer_user").render(question=question, sources=format_sources(sources))
        contents = [*_history_contents(history), _content("user", prompt)]
        return self._stream(contents, _sampled(self._answer_config, sampling))

    def answer_with_tools(
        self,
        question: str,
        sources: Sequence[SourceText],
        history: Sequence[Turn],
        tools: Tools,
        sampling: Sampling | None = None,
    ) -> Iterator[str]:
        """Assist mode: the model may call `tools` (function calling) before it answers; each call's result
        is read back to it, at most tools.max_calls calls; then the answer streams as in answer()."""
        prompt = load_prompt("answer_user").render(question=question, sources=format_sources(sources))
        contents = [*_history_contents(history), _content("user", prompt)]
        config = _sampled(
            types.GenerateContentConfig(
                system_instruction=self._answer_config.system_instruction,
                tools=[types.Tool(function_declarations=[_declaration(spec) for spec in tools.specs])],
                automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
            ),
            sampling,
        )
        calls_made = 0
        while calls_made < tools.max_calls:
            response = self._with_retries(
                lambda: self._client.models.generate_content(
                    model=self.name, contents=contents, config=config
                )
            )
            _report_usage(response)
            calls = (response.function_calls or [])[: tools.max_calls - calls_made]
            if not calls:
                if response.text:  # answered without (more) tools: that is the answer
                    yield response.text
                    return
                break
            assert response.candidates
            assert response.candidates[0].content
            contents.append(response.candidates[0].content)
            replies = []
            for call in calls:
                result = tools.call(call.name or "", dict(call.args or {}))
                replies.append(
                    types.Part.from_function_response(name=call.name or "", response={"result": result})
                )
            contents.append(types.Content(role="user", parts=replies))
            calls_made += len(calls)
        # The call budget is spent (or the model stopped without text): it answers from what it has,
        # with the tools still declared (the history holds its calls) but no more calls allowed.
        final = config.model_copy(
            update={
                "tool_config": types.ToolConfig(
                    function_calling_config=types.FunctionCallingConfig(
                        mode=types.FunctionCallingConfigMode.NONE
                    )
                )
            }
        )
        yield from self._stream(contents, final)

    def complete(self, system: str, prompt: str) -> str | None:
        """One non-streamed generation; None when the model returned no text."""
        config = types.GenerateContentConfig(system_instruction=system or None)
        response = self._generate(prompt, config)
        return (response.text or "").strip() or None

    def complete_json(self, system: str, prompt: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        """Structured output: the model is held to `schema` (response_json_schema). What it wrote is
        still parsed leniently (fences and prose around the object ignored); None when it holds none."""
        config = types.GenerateContentConfig(
            system_instruction=system or None,
            response_mime_type="application/json",
            response_json_schema=schema,
        )
        text = (self._generate(prompt, config).text or "").strip()
        try:
            value = parse_json(text)
        except ValueError:
            log.warning("Gemini (%s) returned no JSON object: %.200r", self.name, text)
            return None
        return value if isinstance(value, dict) else None

    def _generate(self, prompt: str, config: types.GenerateContentConfig) -> types.GenerateContentResponse:
        response = self._with_retries(
            lambda: self._client.models.generate_content(model=self.name, contents=prompt, config=config)
        )
        _report_usage(response)
        return response

    def _stream(
        self, contents: list[types.Content], config: types.GenerateContentConfig | None = None
    ) -> Iterator[str]:
        attempt = 0
        while True:
            yielded = False
            last: types.GenerateContentResponse | None = None
            try:
                stream = self._client.models.generate_content_stream(
                    model=self.name, contents=contents, config=config or self._answer_config
                )
                for last in stream:
                    if last.text:
                        yielded = True
                        yield last.text
                _report_usage(last)  # the last chunk carries the whole response's usage
            except _FAILURES as exc:
                # Text the user has already seen cannot be taken back, so only an untouched stream retries.
                if yielded:
                    raise ProviderError(f"Gemini ({self.name}) answer broke off: {_describe(exc)}") from exc
                self._give_up_unless_retryable(exc, attempt)
            else:
                if not yielded:
                    raise ProviderError(f"Gemini ({self.name}) returned no text ({_no_text_reason(last)})")
                return
            attempt += 1
            self._pause(attempt)

    def _with_retries(self, call: Callable[[], T]) -> T:
        attempt = 0
        while True:
            try:
                return call()
            except _FAILURES as exc:
                self._give_up_unless_retryable(exc, attempt)
            attempt += 1
            self._pause(attempt)

    def _give_up_unless_retryable(self, exc: Exception, attempt: int) -> None:
        retryable = isinstance(exc, _NETWORK_ERRORS) or getattr(exc, "code", None) in _RETRYABLE_STATUS
        if not retryable:
            raise ProviderError(f"Gemini ({self.name}) rejected the request: {_describe(exc)}") from exc
        if attempt >= self._max_retries:
            raise ProviderError(
                f"Gemini ({self.name}) failed after {attempt + 1} attempts: {_describe(exc)}"
            ) from exc
        log.warning("Gemini attempt %d failed, retrying: %s", attempt + 1, _describe(exc))

    def _pause(self, attempt: int) -> None:
        delay = min(self._max_backoff_s, self._backoff_s * 2 ** (attempt - 1))
        time.sleep(random.uniform(delay / 2, delay))  # jitter spreads out clients that failed together


def _make_client(settings: Settings) -> genai.Client:
    if settings.gemini_api_key is None:
        raise ProviderError("LLM_PROVIDER=gemini needs GEMINI_API_KEY (or GOOGLE_API_KEY) to be set")
    http_options = types.HttpOptions(timeout=round(settings.llm_timeout_s * 1000))
    if settings.gemini_base_url:
        http_options.base_url = settings.gemini_base_url
    return genai.Client(
        api_key=settings.gemini_api_key.get_secret_value(), vertexai=False, http_options=http_options
    )


def _declaration(spec: ToolSpec) -> types.FunctionDeclaration:
    return types.FunctionDeclaration(
        name=spec.name, description=spec.description, parameters_json_schema=spec.parameters
    )


def _content(role: str, text: str) -> types.Content:
    return types.Content(role=role, parts=[types.Part(text=text)])


def _history_contents(history: Sequence[Turn]) -> list[types.Content]:
    return [
        _content("model" if turn.role == "assistant" else "user", turn.content)
        for turn in history
        if turn.content.strip()
    ]


def _report_usage(response: types.GenerateContentResponse | None) -> None:
    usage = response.usage_metadata if response is not None else None
    report_tokens(usage.total_token_count if usage is not None else None)


def _describe(exc: Exception) -> str:
    if isinstance(exc, genai_errors.APIError):
        return " ".join(str(part) for part in (exc.code, exc.status, exc.message) if part)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _no_text_reason(response: types.GenerateContentResponse | None) -> str:
    if response is None:
        return "empty stream"
    feedback = response.prompt_feedback
    if feedback is not None and feedback.block_reason:
        return f"prompt blocked: {feedback.block_reason}"
    if response.candidates and response.candidates[0].finish_reason:
        return f"finish reason: {response.candidates[0].finish_reason}"
    return "no candidates"


def _sampled(config: types.GenerateContentConfig, sampling: Sampling | None) -> types.GenerateContentConfig:
    """`config` with the client's temperature and output-token limit, where it set them."""
    if sampling is None:
        return config
    update: dict[str, float | int] = {}
    if sampling.temperature is not None:
        update["temperature"] = sampling.temperature
    if sampling.max_tokens is not None:
        update["max_output_tokens"] = sampling.max_tokens
    return config.model_copy(update=update)
