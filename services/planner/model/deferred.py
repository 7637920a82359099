"""The Gemini adapter, imported when the planner first calls the model.

google-genai takes about 0.9 s of CPU to import (its request and answer types are
hundreds of pydantic models), and every `blendmesh run`, `blendmesh up` and planner
process paid it at start, although a run without a key plans offline and never calls
the model. The import runs in a thread, off the event loop the embedded mesh's other
services share.
"""

from __future__ import annotations

import asyncio
import importlib
from typing import Protocol

from services.planner.model.port import ModelClient, ModelReply, ModelRequest
from services.planner.settings import GeminiSettings


class _ClosingModel(ModelClient, Protocol):
    """The port, plus the close a service's closers call."""

    async def aclose(self) -> None: ...


class DeferredGemini:
    """A ``ModelClient`` that makes its ``GeminiModel`` on the first call."""

    def __init__(self, settings: GeminiSettings) -> None:
        self._settings = settings
        self._model: _ClosingModel | None = None
        self._lock = asyncio.Lock()  # two first calls import and build it once

    async def _loaded(self) -> _ClosingModel:
        async with self._lock:
            if self._model is None:
                module = await asyncio.to_thread(
                    importlib.import_module, "services.planner.model.gemini"
                )
                self._model = module.GeminiModel.from_settings(self._settings)
            return self._model

    async def generate(self, request: ModelRequest) -> ModelReply:
        return await (await self._loaded()).generate(request)

    async def aclose(self) -> None:
        model, self._model = self._model, None
        if model is not None:
            await model.aclose()
