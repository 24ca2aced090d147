"""Chat services: SK's Ollama connector, hardened, and how one is chosen from settings."""

from kernel_setup.chat.ollama_service import HardenedOllamaChatCompletion, parse_text_tool_call

__all__ = ["HardenedOllamaChatCompletion", "parse_text_tool_call"]
