// Server-sent events from a fetch() body: yields the data of each event as a string, in order (the
// `data:` lines of one event joined by newlines; comments such as ": ping" and other fields skipped).
// Aborting the fetch ends the iteration with the AbortError.

function eventData(block) {
  const lines = [];
  for (const line of block.split('\n')) {
    if (line.startsWith('data:')) lines.push(line.slice(line.startsWith('data: ') ? 6 : 5));
  }
  return lines.length ? lines.join('\n') : null;
}

export async function* readSse(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      // A CR of a CRLF may end one read and its LF begin the next: normalize the whole unparsed tail.
      buffer = (buffer + value).replace(/\r\n/g, '\n');
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const data = eventData(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
        if (data !== null) yield data;
      }
    }
    const data = eventData(buffer);
    if (data !== null) yield data;
  } finally {
    await reader.cancel().catch(() => {});  // a consumer that stops early releases the connection
  }
}
