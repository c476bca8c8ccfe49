"""Index settings: defaults, which keys PATCH merges, locales, and validation of a PATCH."""

from __future__ import annotations

import re
from typing import Any

from .errors import ApiError

_DEFAULT_SETTINGS: dict[str, Any] = {
    "displayedAttributes": ["*"],
    "searchableAttributes": ["*"],
    "filterableAttributes": [],
    "sortableAttributes": [],
    "rankingRules": ["words", "typo", "proximity", "attribute", "sort", "exactness"],
    "stopWords": [],
    "nonSeparatorTokens": [],
    "separatorTokens": [],
    "dictionary": [],
    "synonyms": {},
    "distinctAttribute": None,
    "proximityPrecision": "byWord",
    "typoTolerance": {
        "enabled": True,
        "minWordSizeForTypos": {"oneTypo": 5, "twoTypos": 9},
        "disableOnWords": [],
        "disableOnAttributes": [],
        "disableOnNumbers": False,
    },
    "faceting": {"maxValuesPerFacet": 100, "sortFacetValuesBy": {"*": "alpha"}},
    "pagination": {"maxTotalHits": 1000},
    "embedders": {},
    "searchCutoffMs": None,
    "localizedAttributes": None,
    "facetSearch": True,
    "prefixSearch": "indexingTime",
}
_MERGED_SETTINGS = {"typoTolerance", "faceting", "pagination"}
# ISO 639-1 -> 639-3, as in meilisearch-types' locales.rs; settings echo the 639-3 form.
_LOCALE_639_3 = dict(
    pair.split(":")
    for pair in (
        "af:afr ak:aka am:amh ar:ara az:aze be:bel bn:ben bg:bul ca:cat cs:ces da:dan "
        "de:deu el:ell en:eng eo:epo et:est fi:fin fr:fra gu:guj he:heb hi:hin hr:hrv "
        "hu:hun hy:hye id:ind it:ita jv:jav ja:jpn kn:kan ka:kat km:khm ko:kor la:lat "
        "lv:lav lt:lit ml:mal mr:mar mk:mkd my:mya ne:nep nl:nld nb:nob or:ori pa:pan "
        "fa:pes pl:pol pt:por ro:ron ru:rus si:sin sk:slk sl:slv sn:sna es:spa sr:srp "
        "sv:swe ta:tam te:tel tl:tgl th:tha tk:tuk tr:tur uk:ukr ur:urd uz:uzb vi:vie "
        "yi:yid zh:zho zu:zul "
    ).split()
)
_LOCALES = {*_LOCALE_639_3, *_LOCALE_639_3.values(), "cmn"}


def _validate_setting(key: str, value: Any) -> Any:
    if key not in _DEFAULT_SETTINGS:
        raise ApiError(
            400,
            "bad_request",
            f"Unknown field `{key}`: expected one of "
            + ", ".join(f"`{k}`" for k in _DEFAULT_SETTINGS),
        )
    if value is None:
        return None
    if key == "filterableAttributes":
        return [_filterable_rule(rule) for rule in _list_of(key, value)]
    if key == "localizedAttributes":
        for rule in _list_of(key, value):
            patterns, locales = rule.get("attributePatterns"), rule.get("locales")
            if not isinstance(patterns, list) or not isinstance(locales, list):
                raise ApiError(
                    400,
                    "invalid_settings_localized_attributes",
                    "Each rule needs `attributePatterns` and `locales` arrays.",
                )
            bad = [loc for loc in locales if loc not in _LOCALES]
            rule["locales"] = [_LOCALE_639_3.get(loc, loc) for loc in locales]
            if bad:
                raise ApiError(
                    400,
                    "invalid_settings_localized_attributes",
                    f"Unknown value `{bad[0]}` at `.localizedAttributes[0].locales`",
                )
    if key == "typoTolerance":
        allowed = set(_DEFAULT_SETTINGS["typoTolerance"])
        unknown = set(value) - allowed
        if unknown:
            raise ApiError(
                400,
                "invalid_settings_typo_tolerance",
                f"Unknown field `{sorted(unknown)[0]}` inside `.typoTolerance`",
            )
    if key in ("searchableAttributes", "displayedAttributes"):
        _list_of(key, value)
    return value


def _list_of(key: str, value: Any) -> list[Any]:
    if not isinstance(value, list):
        code = "invalid_settings_" + re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()
        raise ApiError(400, code, f"Invalid value type at `.{key}`: expected an array")
    return value


def _filterable_rule(rule: Any) -> Any:
    if isinstance(rule, str):
        return rule
    if not isinstance(rule, dict) or not isinstance(rule.get("attributePatterns"), list):
        raise ApiError(
            400,
            "invalid_settings_filterable_attributes",
            "Each rule is a string or an object with `attributePatterns`.",
        )
    features = rule.get("features") or {}
    filter_features = features.get("filter") or {}
    return {
        "attributePatterns": rule["attributePatterns"],
        "features": {
            "facetSearch": bool(features.get("facetSearch", False)),
            "filter": {
                "equality": bool(filter_features.get("equality", True)),
                "comparison": bool(filter_features.get("comparison", False)),
            },
        },
    }
