"""Helpers shared by the tests: real servers, repositories, CLI runners."""
