"""The in-process model: llama.cpp through ``llama-cpp-python`` (the ``local`` extra), its install and its checks."""
