"""Reading Feishu messages: text, rich text, placeholders, mentions."""

from __future__ import annotations

import json

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
    assert content_text("audio", "{}") == "[audio]"
    assert content_text("file", json.dumps({"file_name": "q3.xlsx"})) == "[file: q3.xlsx]"
    assert content_text("brand_new_type", "{}") == "[brand_new_type]"


def test_thread_ids_and_create_time_are_kept() -> None:
    body = events.message_event(
        text="x", root_id="om_root", parent_id="om_parent", thread_id="omt_1"
    )
    msg = normalize(body, bot_open_id="ou_bot")
    assert (msg.root_id, msg.parent_id, msg.thread_id) == ("om_root", "om_parent", "omt_1")
    assert msg.created_at.tzinfo is not None
