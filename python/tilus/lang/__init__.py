"""The tilus script language: transpiler, instruction methods, types and errors."""
