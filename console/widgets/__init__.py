"""Widgets of the console, grouped by domain. Each renders part of a Snapshot and redraws only
when its own slice of the data changed."""
