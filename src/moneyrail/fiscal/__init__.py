"""The fiscal API (/fiscal/v1, Service-Version 2026-08-29): legal invoice documents.

The interface this service implements gives only the fiscal API's base address and version (spec 4.O,
part 9); its operations are not shown. So the base answers, with its version and the documented
errors, and every other address under it is 404 `resource_missing` saying so, rather than a guess.
"""
