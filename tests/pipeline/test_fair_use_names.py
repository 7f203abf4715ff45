"""Fair use: LLM names that only look like another LLM's are refused (catalogue/names.py, the UTS #39 skeleton)."""

from __future__ import annotations

import unicodedata

import pytest
from confusable_homoglyphs.confusables import confusables_data
from django.core.files.uploadedfile import SimpleUploadedFile
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

from catalogue.models import LLM, Submission
from catalogue.names import name_skeleton, name_skeletons, name_visible
from tests.pipeline.fair_use import KERNEL, samples, token_client, upload
from tests.pipeline.helpers import DEMO_SET, demo_kernel, kernel_name, make_zip

pytestmark = pytest.mark.django_db


def look_alikes(name: str, other: str) -> bool:
    """What llm_find compares: whether the two names share a skeleton."""
    return bool(set(name_skeletons(name)) & set(name_skeletons(other)))


# --- Look-alike LLM names ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "alice\u200b-model",
        "\u0430lice-model",
        "alice\u2010model",
        "ALICE-MODEL",
        "\u202ealice-model",
        "alice\u2013model",
    ],
    ids=["zero-width-space", "cyrillic-a", "u2010-hyphen", "case", "bidi-override", "en-dash"],
)
def test_a_look_alike_of_another_owners_llm_is_refused_naming_it(demo_problems, api, bob, name, sent):
    assert upload(api, make_zip({kernel_name(1, 1, 0): KERNEL}), llm="alice-model").status_code == 202
    owned = LLM.objects.get(name="alice-model")
    response = upload(token_client(bob), make_zip({kernel_name(1, 2, 0): demo_kernel(1, 2, 0)}), llm=name)
    assert response.status_code == 403, response.content
    assert "'alice-model'" in response.json()["detail"] and "alice" in response.json()["detail"]
    assert LLM.objects.count() == 1 and LLM.objects.get().pk == owned.pk
    assert Submission.objects.filter(uploader=bob).count() == 0


def test_the_web_form_refuses_a_look_alike_name(demo_problems, api, client, bob, sent):
    assert upload(api, make_zip({kernel_name(1, 1, 0): KERNEL}), llm="alice-model").status_code == 202
    client.force_login(bob)
    payload = {"bundle": SimpleUploadedFile("r.zip", samples(1)), "problem_set": DEMO_SET, "hardware": "cpu"}
    response = client.post("/submit/", {**payload, "new_llm": "\u0430lice-model"})
    assert response.status_code == 403 and "looks like the existing LLM" in response.content.decode()
    assert LLM.objects.count() == 1


def test_the_owner_may_not_make_a_look_alike_of_their_own_llm_either(demo_problems, api, sent):
    assert upload(api, samples(1), llm="alice-model").status_code == 202
    response = upload(api, samples(1, start=1), llm="alice\u2010model")
    assert response.status_code == 403 and "Use that exact name" in response.json()["detail"]
    assert upload(api, samples(1, start=1), llm="Alice-Model").status_code == 202  # the same name, any case


def test_invisible_characters_never_reach_a_stored_name(demo_problems, api, sent):
    assert upload(api, samples(1), llm="new\u200b-mo\u2066del").status_code == 202
    llm = LLM.objects.get()
    assert llm.name == "new-model" and llm.name_skeleton == name_skeleton("new-model")


def test_skeletons_fold_case_width_confusables_and_dashes():
    variants = (
        "ＡＬＩＣＥ－model",
        "\u0391lice\u2011m\u03bfdel",
        "ALICE-MODEL",
        "\u0391LICE-MODEL",
        "a\u04cfice-model",
    )
    assert all(look_alikes(name, "alice-model") for name in variants)
    assert name_skeleton("alice-model-2") != name_skeleton("alice-model")


# The issue's six: each was accepted (202) and ranked beside the owner's GPT-5.5.
LOOK_ALIKES = {
    "cyrillic-er-te": "G\u0420\u0422-5.5",
    "greek-tau": "GP\u03a4-5.5",
    "grapheme-joiner": "GPT-5.5\u034f",
    "variation-selector": "GPT-5.5\ufe0f",
    "hangul-filler": "GPT-5.5\u3164",
    "dot-below": "G\u0323PT-5.5",
}


@pytest.mark.parametrize("name", LOOK_ALIKES.values(), ids=LOOK_ALIKES.keys())
def test_the_issues_look_alikes_of_gpt_5_5_are_refused(demo_problems, api, bob, name, sent):
    assert upload(api, samples(1), llm="GPT-5.5").status_code == 202
    response = upload(token_client(bob), make_zip({kernel_name(1, 2, 0): demo_kernel(1, 2, 0)}), llm=name)
    assert response.status_code == 403, response.content
    assert "'GPT-5.5'" in response.json()["detail"] and "alice" in response.json()["detail"]
    assert list(LLM.objects.values_list("name", flat=True)) == ["GPT-5.5"]
    assert Submission.objects.filter(uploader=bob).count() == 0


def test_a_name_of_marks_alone_is_refused(demo_problems, api, sent):
    response = upload(api, samples(1), llm="\u0301\u0301\u20dd")
    assert response.status_code == 400 and "no visible letter" in response.json()["detail"]
    assert LLM.objects.count() == 0


# --- The class, not the examples: skeletons over the whole confusables data and every mark and filler -------------

NAME = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-.", min_size=1, max_size=16)


def _single(text: str) -> str:
    return text.replace("\u200e", "")  # the library wraps right-to-left characters in LRMs for display


# Every (look-alike, Latin letter or digit) line of Unicode's confusables.txt, read from the library's raw data
# (not through catalogue.names' reconstruction of which side is the prototype).
PAIRS = sorted(
    {
        (_single(key), _single(entry["c"]))
        for key, entries in confusables_data.items()
        for entry in entries
        if len(_single(key)) == 1 and not _single(key).isascii() and len(_single(entry["c"])) == 1
        if _single(entry["c"]).isascii() and _single(entry["c"]).isalnum()
    }
)
SOURCES: dict[str, list[str]] = {}
for _source, _target in PAIRS:
    SOURCES.setdefault(_target, []).append(_source)
MARKS = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) in ("Mn", "Me")]


def test_the_confusables_data_holds_the_classes_under_test():
    latin = {target for _, target in PAIRS}
    assert len(PAIRS) > 1000 and latin >= set("ABCEHKMNOPTXYabceijlopsxy23456789")
    assert len(MARKS) > 1500


@examples(max_examples=300, deadline=None)
@given(name=NAME, data=st.data())
def test_any_letters_or_digits_swapped_for_look_alikes_keep_the_skeleton(name, data):
    look_alike = "".join(
        data.draw(st.sampled_from(SOURCES[ch])) if ch in SOURCES and data.draw(st.booleans()) else ch for ch in name
    )
    assert name_skeleton(look_alike) == name_skeleton(name), (look_alike, name)


@examples(max_examples=300, deadline=None)
@given(name=NAME, data=st.data())
def test_a_case_variant_with_a_letter_swapped_for_a_look_alike_is_caught(name, data):
    # Names are the same LLM in any case, so a look-alike of GPT-IO written gpt-io must be caught too.
    variant = "".join(ch.swapcase() if data.draw(st.booleans()) else ch for ch in name)
    swappable = [i for i, ch in enumerate(variant) if ch in SOURCES]
    if not swappable:
        return
    index = data.draw(st.sampled_from(swappable))
    look_alike = variant[:index] + data.draw(st.sampled_from(SOURCES[variant[index]])) + variant[index + 1 :]
    assert look_alikes(look_alike, name), (look_alike, name, name_skeletons(look_alike), name_skeletons(name))


@examples(max_examples=200, deadline=None)
@given(name=NAME, data=st.data())
def test_any_combining_mark_anywhere_keeps_the_skeleton(name, data):
    marked = "".join(ch + data.draw(st.sampled_from(MARKS)) for ch in name)
    assert name_skeletons(marked) == name_skeletons(name)


def test_every_mark_after_a_letter_keeps_the_skeleton():
    base = name_skeletons("GPT-5.5")
    assert [hex(ord(m)) for m in MARKS if name_skeletons(f"G{m}PT-5.5") != base] == []


FILLERS = [0x034F, 0x115F, 0x1160, 0x17B4, 0x180B, 0x180E, 0x200B, 0x2060, 0x2800, 0x3164, 0xFFA0, 0x1BCA0, 0x1D173]
FILLERS += [*range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0), *range(0xE0020, 0xE0080)]


def test_fillers_that_render_as_nothing_never_reach_a_stored_name():
    kept = [hex(c) for c in FILLERS if name_visible(f"GPT{chr(c)}-5.5{chr(c)}") != "GPT-5.5"]
    assert kept == []


@pytest.mark.parametrize(
    ("name", "other"),
    [("GPT-5.5", "GPT-5.6"), ("gpt-4o", "gpt-4"), ("llama-3-70b", "llama-3-7b"), ("model-a", "model-b")],
)
def test_names_that_differ_keep_different_skeletons(name, other):
    assert not look_alikes(name, other)
