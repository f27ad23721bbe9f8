"""Graphs Hector trains and benchmarks on: synthetic benchmark shapes and the bundled Debian package graph."""
