"""Chat connectors: they translate between Semantic Kernel and a model, and decode; no turn policy lives here.

`chat.ollama` is SK's Ollama connector, hardened on the wire; `chat.local` runs a GGUF model in process with
llama.cpp (prompt format, grammars, prompt cache, lookup decoding); `chat.provider` picks one from settings.
"""
