from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from semantic_kernel import Kernel
from semantic_kernel.functions import KernelArguments

from kernel_setup import AppContext

Invoke = Callable[..., Awaitable[Any]]


@pytest.fixture
async def kernel(app: AppContext) -> AsyncIterator[Kernel]:
    yield app.kernel


@pytest.fixture
def invoke(kernel: Kernel) -> Invoke:
    """Call plugin-function through the kernel (every filter runs) and return parsed JSON."""
    import json

    async def call(name: str, **arguments: Any) -> Any:
        plugin, _, function = name.partition("-")
        result = await kernel.invoke(kernel.get_function(plugin, function), KernelArguments(**arguments))
        assert result is not None
        return json.loads(str(result.value))

    return call
