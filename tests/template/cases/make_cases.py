#!/usr/bin/env python3
"""Writes chat_cases.json: the message lists of the chat-template parity test (inputs only; the expected
renderings come from @huggingface/jinja at test time). Run from this directory after editing."""
import json

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name, e.g. Paris"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]}}}
SEARCH = {"type": "function", "function": {
    "name": "search", "description": "Search the web for \"anything\" — quotes, ümlauts, 日本語",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string"}, "max_results": {"type": "integer", "default": 5, "minimum": 1},
        "score": {"type": "number", "default": 0.5}, "safe": {"type": "boolean", "default": True},
        "filters": {"type": "array", "items": {"type": "string"}}, "2": {"type": "null"}, "10": {"type": "null"}},
        "required": ["query"]}, "return": {"type": "string"}}}
EMPTY_PARAMS = {"type": "function", "function": {"name": "now", "description": "",
                                                  "parameters": {"type": "object", "properties": {}}}}


def u(text):
    return {"role": "user", "content": text}


def a(text):
    return {"role": "assistant", "content": text}


def s(text):
    return {"role": "system", "content": text}


def call(name, args, cid="call12345", as_string=False):
    return {"id": cid, "type": "function",
            "function": {"name": name, "arguments": json.dumps(args) if as_string else args}}


def tool_msg(content, cid="call12345"):
    return {"role": "tool", "tool_call_id": cid, "content": content}


cases = []


def add(name, messages, **kw):
    ctx = {"messages": messages}
    ctx.update(kw)
    cases.append({"name": name, "context": ctx})


for agp in (True, False):
    tag = "gen" if agp else "nogen"
    add(f"single_user_{tag}", [u("Hello!")], add_generation_prompt=agp)
    add(f"system_user_{tag}", [s("You are a helpful assistant."), u("What is 2+2?")], add_generation_prompt=agp)
    add(f"two_turns_{tag}", [u("Hi"), a("Hello! How can I help?"), u("Tell me a joke.")], add_generation_prompt=agp)
    add(f"ends_with_assistant_{tag}", [u("Hi"), a("Hello there.")], add_generation_prompt=agp)
    add(f"tools_user_{tag}", [u("Weather in Paris?")], tools=[WEATHER], add_generation_prompt=agp)
    add(f"tool_roundtrip_obj_{tag}", [
        s("Use tools when helpful."), u("Weather in Paris?"),
        {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Paris", "unit": "celsius"})]},
        tool_msg('{"temperature": 21, "sky": "clear"}'), a("It is 21°C and clear in Paris.")],
        tools=[WEATHER], add_generation_prompt=agp)

add("multi_turn_long", [s("Be brief."), u("One"), a("1"), u("Two"), a("2"), u("Three"), a("3"), u("Four")],
    add_generation_prompt=True)
add("whitespace_content", [s("  padded system  \n"), u("\n\n  spaced user\t \n"), a("  spaced answer  "),
                           u("tabs\tand\nnewlines")], add_generation_prompt=True)
add("special_chars", [u("Quotes \" ' and backslash \\ and {{ braces }} and {% tags %}"),
                      a("<b>html</b> & <|im_end|> text"), u("~!@#$%^&*()_+")], add_generation_prompt=True)
add("unicode", [u("Grüße aus München! 日本語のテキスト 🎉🚀 emoji"), a("Ça va? Ελληνικά, русский, עברית"),
                u("👍🏽 ZWJ: 👨‍👩‍👧")], add_generation_prompt=True)
add("empty_content", [u(""), a(""), u("")], add_generation_prompt=True)
add("empty_messages", [], add_generation_prompt=True)
add("system_only", [s("Only a system message.")], add_generation_prompt=True)
add("no_agp_key", [u("No add_generation_prompt key at all")])
add("tools_two", [u("Search for cats and the weather in Oslo")], tools=[WEATHER, SEARCH], add_generation_prompt=True)
add("tools_empty_params", [s("sys"), u("What time is it?")], tools=[EMPTY_PARAMS], add_generation_prompt=True)
add("tool_call_string_args", [
    u("Weather in Rome?"),
    {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Rome"}, as_string=True)]},
    tool_msg("sunny, 30C"), a("Sunny and 30C.")], tools=[WEATHER], add_generation_prompt=False)
add("tool_call_numbers", [
    u("search"),
    {"role": "assistant", "content": "", "tool_calls": [call("search", {
        "query": "x", "max_results": 3, "score": 0.25, "big": 12345678901, "neg": -7, "float_int": 2.0,
        "tiny": 1e-7, "huge": 1.5e300, "flag": False, "nothing": None, "list": [1, "two", [3.5]],
        "nested": {"a": {"b": []}, "c": {}}})]},
    tool_msg("ok"), u("thanks")], tools=[SEARCH], add_generation_prompt=True)
add("parallel_tool_calls", [
    u("Weather in Paris and Rome?"),
    {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Paris"}, "callAAAAA"),
                                                          call("get_weather", {"city": "Rome"}, "callBBBBB")]},
    tool_msg("18C", "callAAAAA"), tool_msg("25C", "callBBBBB"), a("Paris 18C, Rome 25C.")],
    tools=[WEATHER], add_generation_prompt=True)
add("tool_call_with_text", [
    u("Weather?"),
    {"role": "assistant", "content": "Let me check.", "tool_calls": [call("get_weather", {"city": "Oslo"})]},
    tool_msg("cold")], tools=[WEATHER], add_generation_prompt=True)
add("tool_call_null_content", [
    u("Weather?"), {"role": "assistant", "content": None, "tool_calls": [call("get_weather", {"city": "Oslo"})]},
    tool_msg("cold")], tools=[WEATHER], add_generation_prompt=True)
add("tool_result_object", [
    u("Weather?"), {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Oslo"})]},
    {"role": "tool", "tool_call_id": "call12345", "content": {"temp": -3, "unit": "C"}}],
    tools=[WEATHER], add_generation_prompt=True)
add("bad_tool_call_id", [
    u("Weather?"), {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Oslo"}, "c1")]},
    tool_msg("cold", "c1")], tools=[WEATHER], add_generation_prompt=True)
add("multi_step_tools", [
    s("You are an agent."), u("Plan a trip"),
    {"role": "assistant", "content": "", "tool_calls": [call("search", {"query": "flights"}, "callXXXXX")]},
    tool_msg("<tool_response>flights</tool_response>", "callXXXXX"),
    {"role": "assistant", "content": "", "tool_calls": [call("search", {"query": "hotels"}, "callYYYYY")]},
    tool_msg("hotels", "callYYYYY")], tools=[SEARCH], add_generation_prompt=True)
add("roles_not_alternating", [u("one"), u("two")], add_generation_prompt=True)
add("assistant_first", [a("I start"), u("ok")], add_generation_prompt=True)
add("unknown_role", [u("hi"), {"role": "narrator", "content": "Meanwhile..."}], add_generation_prompt=True)
add("content_parts", [{"role": "user", "content": [{"type": "text", "text": "Describe "},
                                                   {"type": "image"}, {"type": "text", "text": " please "}]}],
    add_generation_prompt=True)
add("content_parts_system", [{"role": "system", "content": [{"type": "text", "text": "Sys as parts"}]},
                             {"role": "user", "content": [{"type": "text", "text": "hello"}]}],
    add_generation_prompt=True)
add("content_parts_assistant", [u("q"), {"role": "assistant", "content": [{"type": "text", "text": "part answer"}]}],
    add_generation_prompt=False)
add("extra_fields", [{"role": "user", "content": "hi", "name": "alice"}, a("hello alice")],
    add_generation_prompt=True, custom_flag=True)
add("llama_tools_in_system", [s("Sys prompt"), u("Weather in Paris?")], tools=[WEATHER],
    tools_in_user_message=False, add_generation_prompt=True)
add("llama_custom_date", [u("What day is it?")], date_string="01 Jan 2025", add_generation_prompt=True)
add("llama_tools_no_user", [s("only system")], tools=[WEATHER], add_generation_prompt=True)
add("tools_null", [u("Hi")], tools=None, add_generation_prompt=True)
add("tools_empty_list", [u("Hi")], tools=[], add_generation_prompt=True)

# Qwen3 thinking: enable_thinking on/off/absent, reasoning in content or in reasoning_content.
for think in (True, False, None):
    tag = {True: "on", False: "off", None: "unset"}[think]
    kw = {} if think is None else {"enable_thinking": think}
    add(f"thinking_{tag}", [u("Why is the sky blue?")], add_generation_prompt=True, **kw)
    add(f"thinking_history_{tag}", [
        u("2+2?"), a("<think>\nSimple arithmetic.\n</think>\n\n4"), u("And 3+3?")], add_generation_prompt=True, **kw)
add("thinking_reasoning_field", [
    u("2+2?"), {"role": "assistant", "content": "4", "reasoning_content": "add them"}, u("ok")],
    add_generation_prompt=True, enable_thinking=True)
add("thinking_last_assistant", [
    u("Q"), {"role": "assistant", "content": "\n<think>\nhmm\n\n</think>\n\nAnswer"}], add_generation_prompt=False)
add("thinking_after_tool", [
    u("Weather?"),
    {"role": "assistant", "content": "<think>need tool</think>", "tool_calls": [call("get_weather", {"city": "Oslo"})]},
    tool_msg("cold"), a("<think>\nit is cold\n</think>\n\nIt is cold.")], tools=[WEATHER], add_generation_prompt=False)
add("user_tool_response_text", [u("<tool_response>fake</tool_response>"), a("ok"), u("real question")],
    add_generation_prompt=True)
add("many_turns", [m for i in range(12) for m in (u(f"question {i}"), a(f"answer {i}"))] + [u("last")],
    add_generation_prompt=True)
add("newline_only_messages", [u("\n"), a("\n\n"), u(" ")], add_generation_prompt=True)
add("numeric_content", [u("42"), a("3.14"), u("true")], add_generation_prompt=True)

if __name__ == "__main__":
    with open("chat_cases.json", "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(len(cases), "cases")
