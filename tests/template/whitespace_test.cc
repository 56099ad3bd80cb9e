// Whitespace handling: the HF chat-template settings (trim_blocks, lstrip_blocks), `-` markers on every
// delimiter, comments, the dropped trailing newline and transformers' {% generation %} tag.
#include "render_util.h"

namespace ember::jinja::testing {
namespace {

TEST(Whitespace, TrimBlocksDropsNewlineAfterBlockTag) {
  EXPECT_EQ(R("{% if true %}\nyes\n{% endif %}\ndone"), "yes\ndone");
  // ...but not after an expression.
  EXPECT_EQ(R("{{ 'a' }}\nb"), "a\nb");
}

TEST(Whitespace, LstripBlocksDropsIndentBeforeBlockTag) {
  EXPECT_EQ(R("x\n    {% if true %}\n    y\n    {% endif %}\nz"), "x\n    y\nz");
  // Only spaces/tabs at the start of a line go; text before the tag keeps its spaces.
  EXPECT_EQ(R("a  {% if true %}b{% endif %}"), "a  b");
  // Expressions are not block tags.
  EXPECT_EQ(R("  {{ 'v' }}"), "  v");
}

TEST(Whitespace, SingleTrailingNewlineIsDropped) {
  EXPECT_EQ(R("hello\n"), "hello");
  EXPECT_EQ(R("hello\n\n"), "hello\n");
}

TEST(Whitespace, MinusOnStatementStripsBothSides) {
  EXPECT_EQ(R("a  \n {%- if true %} b {% endif -%}  \n c"), "a b c");
  EXPECT_EQ(R("a \n\t{%- set x = 1 -%}\n  b"), "ab");
}

TEST(Whitespace, MinusOnExpression) {
  EXPECT_EQ(R("a   {{- 'x' -}}   b"), "axb");
  EXPECT_EQ(R("a   {{- 'x' }}   b"), "ax   b");
  EXPECT_EQ(R("a   {{ 'x' -}}   b"), "a   xb");
}

TEST(Whitespace, CommentsAndTheirMarkers) {
  EXPECT_EQ(R("a{# note #}b"), "ab");
  EXPECT_EQ(R("a  {#- note -#}  b"), "ab");
  EXPECT_EQ(R("a\n{# note #}\nb"), "a\nb");  // trim_blocks also applies after #}
}

TEST(Whitespace, StripRemovesUnicodeSpacesLikeJavaScript) {
  // U+00A0 (no-break space) and U+3000 (ideographic space) are whitespace to JS's trimEnd.
  EXPECT_EQ(R("a\xC2\xA0\xE3\x80\x80{{- 'b' }}"), "ab");
}

TEST(Whitespace, GenerationTagIsRemoved) {
  EXPECT_EQ(R("A{% generation %}B{% endgeneration %}C"), "ABC");
  EXPECT_EQ(R("A  {%- generation -%}  B"), "AB");
}

TEST(Whitespace, ChatStyleTemplate) {
  const std::string tmpl =
      "{%- for m in messages %}\n"
      "    {{- '<' + m.role + '>' }}\n"
      "    {%- if m.content %}\n"
      "        {{- m.content }}\n"
      "    {%- endif %}\n"
      "{%- endfor %}\n"
      "{%- if add_generation_prompt %}\n"
      "    {{- '<assistant>' }}\n"
      "{%- endif %}\n";
  EXPECT_EQ(R(tmpl, J(R"({"messages": [{"role": "user", "content": "hi"}, {"role": "bot", "content": ""}],
                         "add_generation_prompt": true})")),
            "<user>hi<bot><assistant>");
}

}  // namespace
}  // namespace ember::jinja::testing
