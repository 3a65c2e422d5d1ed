/** Reads an NDJSON response line by line as it arrives. */
export async function* ndjson(res: Response): AsyncGenerator<Record<string, any>> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  while (true) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let nl = buffer.indexOf('\n');
    while (nl !== -1) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (line.trim()) yield JSON.parse(line);
      nl = buffer.indexOf('\n');
    }
  }
  if (buffer.trim()) yield JSON.parse(buffer);
}

export async function readAll(res: Response): Promise<Array<Record<string, any>>> {
  const lines: Array<Record<string, any>> = [];
  for await (const line of ndjson(res)) lines.push(line);
  return lines;
}

export function answerOf(lines: Array<Record<string, any>>): string {
  return lines
    .filter((l) => l.obj?.type === 'message_delta')
    .map((l) => l.obj.content)
    .join('');
}

export function typesOf(lines: Array<Record<string, any>>): string[] {
  return lines.filter((l) => l.obj).map((l) => l.obj.type);
}
