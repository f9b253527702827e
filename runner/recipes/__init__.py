"""Recipes: the schema and its loading, lint, doctor, resume arguments, versions and the
ms-swift flag tables."""
