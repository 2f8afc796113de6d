"""Shared test support: peer wheels, shared data paths, real files built in tmp dirs."""
