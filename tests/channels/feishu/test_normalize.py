"""Reading Feishu messages: text, rich text, placeholders, mentions."""

from __future__ import annotations

import json

import pytest

from bot.channels.feishu.normalize import content_text, normalize
from tests.fakes import FeishuEventSender, Mention

events = FeishuEventSender(
    "http://unused", app_id="cli_x", encrypt_key=None, verification_token="t"
)


def test_mentions_resolve_to_names_and_the_bot_mention_is_recognised_by_open_id() -> None:
    body = events.message_event(
        text="@_user_1 ask @_user_2 about it",
        chat_type="group",
        mentions=[Mention(open_id="ou_bot", name="Maka"), Mention(open_id="ou_li", name="Li")],
    )
    msg = normalize(body, bot_open_id="ou_bot")
    assert msg.text == "@Maka ask @Li about it"
    assert msg.addressed_text == "ask @Li about it"
    assert msg.mentioned_bot


def test_a_namesake_of_the_bot_is_not_the_bot() -> None:
    body = events.message_event(
        text="@_user_1 hi", chat_type="group", mentions=[Mention(open_id="ou_other", name="Maka")]
    )
    assert not normalize(body, bot_open_id="ou_bot").mentioned_bot


def test_rich_text_post_is_read_as_text() -> None:
    post = {
        "title": "Deploy notes",
        "content": [
            [{"tag": "text", "text": "see "}, {"tag": "a", "text": "the log", "href": "http://x"}],
            [
                {"tag": "at", "user_id": "@_user_1", "user_name": "Li"},
                {"tag": "text", "text": " ok"},
            ],
            [{"tag": "img", "image_key": "img_1"}],
        ],
    }
    body = events.message_event(
        message_type="post", content=post, mentions=[Mention(open_id="ou_li", name="Li")]
    )
    msg = normalize(body, bot_open_id="ou_bot")
    assert msg.text == "Deploy notes\nsee the log\n@Li ok\n[image]"


def test_non_text_content_becomes_a_placeholder() -> None:
    assert content_text("image", json.dumps({"image_key": "img_1"})) == "[image]"
    assert content_text("sticker", "{}") == "[sticker]"
    assert content_text("audio", "{}") == "[voice message]"
    assert content_text("audio", json.dumps({"file_key": "f", "duration": 12_400})) == (
        "[voice message, 12 s]"
    )
    assert content_text("media", json.dumps({"file_name": "a.mp4", "duration": 3000})) == (
        "[video: a.mp4, 3 s]"
    )
    assert content_text("file", json.dumps({"file_name": "q3.xlsx"})) == "[file: q3.xlsx]"
    assert content_text("brand_new_type", "{}") == "[brand_new_type]"


def test_thread_ids_and_create_time_are_kept() -> None:
    body = events.message_event(
        text="x", root_id="om_root", parent_id="om_parent", thread_id="omt_1"
    )
    msg = normalize(body, bot_open_id="ou_bot")
    assert (msg.root_id, msg.parent_id, msg.thread_id) == ("om_root", "om_parent", "omt_1")
    assert msg.created_at.tzinfo is not None


def test_a_file_message_carries_its_resource_with_its_name() -> None:
    body = events.message_event(
        message_type="file", content={"file_key": "file_v3_1", "file_name": "a.pdf"}
    )
    msg = normalize(body, bot_open_id="ou_bot")
    assert [(a.key, a.kind, a.name) for a in msg.attachments] == [("file_v3_1", "file", "a.pdf")]
    assert msg.to_payload()["attachments"][0]["key"] == "file_v3_1"


def test_voice_and_video_carry_their_duration() -> None:
    audio = normalize(
        events.message_event(message_type="audio", content={"file_key": "k1", "duration": 7000}),
        bot_open_id=None,
    )
    video = normalize(
        events.message_event(
            message_type="media",
            content={"file_key": "k2", "image_key": "cover", "file_name": "v.mp4", "duration": 9},
        ),
        bot_open_id=None,
    )
    assert [(a.kind, a.duration_ms) for a in audio.attachments] == [("audio", 7000)]
    assert [(a.kind, a.key, a.name) for a in video.attachments] == [("media", "k2", "v.mp4")]


def test_a_post_carries_each_image_once() -> None:
    post = {
        "zh_cn": {
            "content": [
                [{"tag": "img", "image_key": "img_a"}, {"tag": "text", "text": "and"}],
                [{"tag": "img", "image_key": "img_b"}, {"tag": "img", "image_key": "img_a"}],
            ]
        }
    }
    msg = normalize(events.message_event(message_type="post", content=post), bot_open_id=None)
    assert [a.key for a in msg.attachments] == ["img_a", "img_b"]


def test_a_resource_without_a_usable_key_is_left_out_and_the_message_kept(
    caplog: pytest.LogCaptureFixture,
) -> None:
    body = events.message_event(message_type="image", content={"image_key": ["not", "a", "key"]})
    msg = normalize(body, bot_open_id=None)
    assert msg.attachments == ()
    assert msg.text == "[image]"
    assert "image key" in caplog.text
