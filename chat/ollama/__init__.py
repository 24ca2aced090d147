"""SK's Ollama connector, hardened: synthetic call ids, results in call order naming their tool."""

from chat.ollama.service import HardenedOllamaChatCompletion, parse_text_tool_call

__all__ = ["HardenedOllamaChatCompletion", "parse_text_tool_call"]
