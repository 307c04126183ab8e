/** Every piece an async iterable gives, as text, and what it threw at the end, if anything. */
export async function drain(pieces: AsyncIterable<Buffer | string>): Promise<{ text: string[]; error: unknown }> {
  const text: string[] = [];
  try {
    for await (const piece of pieces) text.push(piece.toString());
    return { text, error: undefined };
  } catch (error) {
    return { text, error };
  }
}
