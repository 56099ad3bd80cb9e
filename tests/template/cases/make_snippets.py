#!/usr/bin/env python3
"""Writes snippets.json: one small template per construct, rendered by both ember and @huggingface/jinja
in snippet_parity_test.cc (the reference decides the expected output, or that it must raise)."""
import json

CTX = {
    "s": "Hello, World", "n": 7, "f": 2.5, "fi": 2.0, "t": True, "z": None, "e": "", "neg": -3,
    "xs": [3, 1, 2], "words": ["b", "A", "c"], "empty": [], "d": {"b": 1, "a": [1, 2], "c": {"x": None}},
    "msgs": [{"role": "system", "content": "sys"}, {"role": "user", "content": "  hi  "},
             {"role": "assistant", "content": "yo", "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]},
             {"role": "user", "content": "<tool_response>r</tool_response>"}],
    "uni": "Grüße 🎉 日本", "ws": " \t\n x y \n", "nested": [[1, [2, 3]], {"k": [True, None]}],
}

SNIPPETS = {
    # printing
    "print_scalars": "{{ n }}|{{ f }}|{{ fi }}|{{ t }}|{{ z }}|{{ e }}|{{ neg }}|{{ 1000 if false else 0.1 }}",
    "print_containers": "{{ xs }}{{ d }}{{ nested }}{{ empty }}{{ {} }}",
    "print_undefined_in_list": "{{ [missing, z] }}",
    "float_math": "{{ 0.1 + 0.2 }}|{{ 10 / 4 }}|{{ 1 / 3 }}|{{ 2.5 * 2 }}|{{ 3 - 0.5 }}|{{ 1.0 if true }}",
    "int_math": "{{ 2 ** 3 ** 2 }}|{{ 17 % 5 }}|{{ -17 % 5 }}|{{ 17 // -5 }}|{{ n * n - n }}",
    "unary": "{{ -n }}|{{ +n }}|{{ -f }}|{{ - -n }}|{{ not t }}|{{ -(1 + 2) }}",
    # strings
    "concat": "{{ s ~ n ~ f ~ t }}|{{ s + '!' }}|{{ n ~ '' ~ fi }}|{{ 'x' ~ xs }}|{{ 'x' ~ d }}",
    "string_methods": "{{ s.upper() }}|{{ s.lower() }}|{{ ws.strip() }}|{{ ws.lstrip() }}|{{ ws.rstrip() }}|{{ s.title() }}",
    "string_split": "{{ s.split(', ') }}{{ ws.split() }}{{ 'a b c'.split(' ', 1) }}{{ 'x'.split('y') }}",
    "string_tests": "{{ s.startswith('Hell') }}{{ s.endswith('x') }}{{ s.startswith(['x', 'H']) }}",
    "string_index": "{{ s[0] }}{{ s[-1] }}{{ s[1:4] }}{{ s[::-1] }}{{ uni[::-1] }}{{ uni[2] }}{{ s[100] }}",
    "string_length": "{{ s | length }}{{ uni | length }}{{ s.length }}{{ '' | length }}",
    "string_replace": "{{ s.replace('l', 'L') }}{{ s.replace('l', 'L', 1) }}{{ s | replace('o', '0') }}",
    "string_in": "{{ 'World' in s }}{{ 'world' in s }}{{ 'x' not in s }}",
    "trim_filter": "[{{ ws | trim }}][{{ msgs[1].content | trim }}]",
    "case_filters": "{{ s | upper }}{{ s | lower }}{{ 'abc def' | capitalize }}{{ 'abc def' | title }}",
    "escapes": "{{ 'tab\\tnl\\nq\\'dq\\\"bs\\\\' }}|{{ \"\\u00e9\\x41\" }}",
    # comparisons / logic
    "compare": "{{ n > 5 }}{{ n < 5 }}{{ n >= 7 }}{{ n <= 6 }}{{ n == 7.0 }}{{ n != '7' }}{{ f == 2.5 }}",
    "loose_eq": "{{ 1 == true }}{{ 0 == false }}{{ '' == 0 }}{{ z == missing }}{{ xs == xs }}{{ d == d }}{{ [] == [] }}",
    "logic_values": "{{ n and s }}|{{ e or 'dflt' }}|{{ z or e or 'last' }}|{{ xs and empty }}|{{ not empty }}",
    "membership": "{{ 1 in xs }}{{ 4 in xs }}{{ 'a' in d }}{{ 'zz' not in d }}{{ 'q' in missing }}{{ 2.0 in xs }}",
    "ternary": "{{ 'a' if t else 'b' }}{{ 'a' if z else 'b' }}{{ 'a' if e }}{{ 1 if false else 2 if false else 3 }}",
    # access
    "member_access": "{{ d.b }}{{ d['a'][1] }}{{ d.c.x }}{{ d.c.y }}{{ d.missing.deeper }}{{ msgs[2].tool_calls[0].function.name }}",
    "negative_index": "{{ xs[-1] }}{{ xs[-3] }}{{ xs[-4] }}{{ msgs[-1].role }}",
    "slices": "{{ xs[1:] }}{{ xs[:1] }}{{ xs[::-1] }}{{ xs[::2] }}{{ xs[-2:] }}{{ xs[0:0] }}{{ msgs[1:3] | length }}",
    "dict_methods": "{{ d.keys() }}{{ d.values() }}{{ d.items() }}{{ d.get('b') }}{{ d.get('q', 9) }}{{ d.get('q') }}",
    "attr_on_scalars": "[{{ n.foo }}{{ t.bar }}{{ z.baz }}]",
    "index_undefined_error": "{{ missing[0] }}",
    "call_undefined_error": "{{ s.nosuch() }}",
    # tests
    "is_tests": "{{ s is string }}{{ n is number }}{{ f is integer }}{{ xs is iterable }}{{ d is iterable }}{{ d is mapping }}"
                "{{ z is none }}{{ missing is defined }}{{ t is true }}{{ n is odd }}{{ xs is sequence }}{{ s is lower }}",
    "is_not": "{{ z is not none }}{{ missing is not defined }}{{ n is not even }}",
    # filters
    "tojson_default": "{{ d | tojson }}{{ msgs[2] | tojson }}{{ uni | tojson }}{{ nested | tojson }}",
    "tojson_indent": "{{ d | tojson(indent=4) }}\n{{ nested | tojson(indent=2) }}",
    "tojson_options": "{{ d | tojson(sort_keys=true) }}{{ uni | tojson(ensure_ascii=true) }}{{ xs | tojson(separators=(',', ':')) }}",
    "length_filter": "{{ xs | length }}{{ d | length }}{{ msgs | length }}",
    "first_last": "{{ xs | first }}{{ xs | last }}{{ words | first }}",
    "join_filter": "{{ xs | join }}|{{ words | join(', ') }}|{{ s | join('.') }}|{{ [1, none, 'x'] | join('-') }}",
    "sort_filter": "{{ xs | sort }}{{ words | sort }}{{ words | sort(case_sensitive=true) }}{{ xs | sort(reverse=true) }}",
    "sort_attribute": "{{ msgs | sort(attribute='role') | map(attribute='role') | list }}",
    "reverse_unique": "{{ xs | reverse }}{{ [1, 2, 1, 'a', 'a'] | unique }}",
    "items_filter": "{% for k, v in d | items %}{{ k }}={{ v }};{% endfor %}",
    "dictsort_filter": "{{ d | dictsort }}",
    "default_filter": "{{ missing | default('a') }}{{ e | default('b') }}{{ e | default('c', true) }}{{ z | default('d') }}",
    "string_filter": "{{ n | string }}{{ f | string }}{{ fi | string }}{{ t | string }}{{ xs | string }}",
    "int_float_filters": "{{ '12' | int }}{{ ' 3x' | int }}{{ 'x' | int }}{{ f | int }}{{ '1.5e3' | float }}{{ n | float }}",
    "abs_filter": "{{ neg | abs }}{{ -2.5 | abs }}",
    "selectattr_filter": "{{ msgs | selectattr('role', 'equalto', 'user') | map(attribute='content') | list }}"
                         "{{ msgs | rejectattr('role', 'eq', 'user') | list | length }}{{ msgs | selectattr('tool_calls') | list | length }}",
    "map_filter": "{{ msgs | map(attribute='role') | join(',') }}{{ msgs | map(attribute='nope', default='?') | join }}",
    "indent_filter": "{{ 'a\\nb\\n\\nc' | indent }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'a\\n\\nb' | indent(1, false, true) }}",
    "list_filter": "{{ xs | list }}",
    "unknown_filter_error": "{{ s | nosuchfilter }}",
    "filter_on_none_error": "{{ z | trim }}",
    # statements
    "for_loop_vars": "{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
                     "{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }};{% endfor %}",
    "for_else": "{% for x in empty %}x{% else %}none{% endfor %}{% for x in xs %}{{ x }}{% else %}none{% endfor %}",
    "for_if": "{% for m in msgs if m.role == 'user' %}{{ loop.index }}/{{ loop.length }}:{{ m.content }};{% endfor %}",
    "for_dict": "{% for k in d %}{{ k }}{% endfor %}",
    "for_unpack": "{% for a, b in [[1, 2], [3, 4]] %}{{ a }}{{ b }}{% endfor %}",
    "for_break_continue": "{% for x in [1, 2, 3, 4, 5] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}",
    "for_continue_drops_output": "{% for x in xs %}[{{ x }}{% if x == 1 %}{% continue %}{% endif %}]{% endfor %}",
    "for_all_continue_runs_else": "{% for x in xs %}{% continue %}{% else %}E{% endfor %}",
    "for_reverse_messages": "{% for m in msgs[::-1] %}{{ (msgs | length - 1) - loop.index0 }}{{ m.role[0] }}{% endfor %}",
    "for_string_error": "{% for c in s %}{{ c }}{% endfor %}",
    "if_elif": "{% for v in [0, 1, 2, 3] %}{% if v == 0 %}z{% elif v == 1 %}o{% elif v == 2 %}t{% else %}m{% endif %}{% endfor %}",
    "set_scoping": "{% set a = 1 %}{% for x in xs %}{% set a = a + x %}{{ a }}{% endfor %}|{{ a }}",
    "set_block": "{% set b %}{{ s }}!{% endset %}{{ b | length }}{{ b }}",
    "set_tuple": "{% set p, q = xs[:2] %}{{ q }}{{ p }}",
    "namespace": "{% set ns = namespace(c=0, last=none) %}{% for m in msgs %}{% set ns.c = ns.c + 1 %}{% set ns.last = m.role %}{% endfor %}{{ ns.c }}{{ ns.last }}{{ ns }}",
    "namespace_from_dict": "{% set ns = namespace(d) %}{{ ns.b }}{% set ns.b = 5 %}{{ ns.b }}{{ d.b }}",
    "macro_basic": "{% macro m(a, b='B') %}<{{ a }}{{ b }}>{% endmacro %}{{ m(1) }}{{ m(1, 2) }}{{ m(b=3, a=4) }}{{ m() }}",
    "macro_varargs_kwargs": "{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, x=3) }}",
    "macro_too_many_error": "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}",
    "macro_recursive": "{% macro r(x) %}{% if x is mapping %}{% for k, v in x.items() %}{{ k }}:{{ r(v) }} {% endfor %}"
                       "{% elif x is iterable and x is not string %}[{% for i in x %}{{ r(i) }}{% endfor %}]{% else %}{{ x }}{% endif %}"
                       "{% endmacro %}{{ r(d) }}",
    "call_block": "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}bold {{ n }}{% endcall %}",
    "call_block_args": "{% macro each(xs) %}{% for x in xs %}{{ caller(x, loop.index) }}{% endfor %}{% endmacro %}"
                       "{% call(item, i) each(words) %}{{ i }}={{ item }} {% endcall %}",
    "filter_block": "{% filter upper %}hello {{ s }}{% endfilter %}",
    "raise": "{% if n > 5 %}{{ raise_exception('n too big: ' ~ n) }}{% endif %}",
    "range_fn": "{{ range(4) }}{{ range(2, 5) }}{{ range(10, 0, -3) }}{% for i in range(3) %}{{ i }}{% endfor %}",
    "strftime": "{{ strftime_now('%Y-%m-%d %H:%M %b %B %% %a') }}",
    "object_literal": "{{ {'a': 1, 'b': [n, s], 'a': 2} }}{{ {'k': {'n': {}}}['k'] }}",
    "list_concat": "{{ xs + [4] }}{{ (xs + empty) | length }}",
    "comments": "a{# c1 #}b{#- c2 -#} c {#- c3 #}",
    "whitespace_control": "x  {%- if true -%}  y  {%- endif -%}  z\n  {{- n -}}  \n w",
    "lstrip_trim": "a\n    {% if true %}\n    b\n    {% endif %}\nc\n{# comment #}\nd",
    "generation_tag": "{% generation %}gen{% endgeneration %}|  {%- generation -%}  x",
    "keyword_literals": "{{ True }}{{ False }}{{ None }}{{ true and True }}",
    "unknown_test_error": "{{ n is frobbed }}",
    "unknown_statement_error": "{% include 'x' %}",
    "undefined_op_error": "{{ missing + 1 }}",
    "none_op_error": "{{ z + 1 }}",
    "str_lt_error": "{{ 'a' < 'b' }}",
}

if __name__ == "__main__":
    out = [{"name": k, "template": v, "context": CTX} for k, v in SNIPPETS.items()]
    with open("snippets.json", "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(len(out), "snippets")
