// JSON Schema `pattern` (an ECMA-262 regex) to GBNF, for a subset: literals, escapes (\d \w \s and their
// negations, \n \t \xHH \uHHHH, escaped punctuation), classes [a-z] [^...], '.', groups ( ) (?: ) (?<n> ),
// alternation, the quantifiers ? * + {m} {m,} {m,n} (lazy forms too: same language), and the anchors ^ and
// $ at the ends of a top-level alternative. Anything else (lookaround, backreferences, \b, \p{..}, anchors
// elsewhere) is an error naming it. Internal to grammar/.
#pragma once

#include <string>
#include <string_view>

#include "util/status.h"

namespace ember::grammar::schema_regex {

// GBNF for the JSON string *content* (between the quotes) whose decoded value the pattern matches. As in
// JSON Schema the match is a search: an alternative without ^ (or $) may be preceded (followed) by any
// characters, spelled as `any_char` (the name of a rule matching one unit of string content).
StatusOr<std::string> PatternToGbnf(std::string_view pattern, const std::string& any_char);

}  // namespace ember::grammar::schema_regex
