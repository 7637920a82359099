"""Planning with a language model: the port, the prompt, the answer, the repair loop."""
