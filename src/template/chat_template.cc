#include "template/chat_template.h"

namespace ember {

StatusOr<std::string> RenderChatTemplate(const std::string& tmpl, const nlohmann::ordered_json& context,
                                         const ChatTemplateOptions& opts) {
  if (!context.is_object()) return InvalidArgument("chat template context must be a JSON object");
  const auto messages = context.find("messages");
  if (messages == context.end() || !messages->is_array()) {
    return InvalidArgument("chat template context needs a 'messages' array");
  }
  EMBER_ASSIGN_OR_RETURN(jinja::Template t, jinja::Template::Parse(tmpl));
  return t.Render(context, opts);
}

}  // namespace ember
