/*
 * fe_stream_gemini: placeholder until the gemini stream renderer lands; the style
 * does not point at it yet, so stream:true is refused for it.
 */
#include "fe_stream.h"

const fe_stream_style_t fe_stream_gemini = {.content_type = "text/event-stream"};
