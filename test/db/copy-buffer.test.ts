import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CopyBuffer } from '../../src/db/copy-buffer.js';

/*
 * COPY text gathered outside the heap (src/db/copy-buffer.ts): whatever is appended, in whatever
 * pieces, the bytes are those of the whole text in UTF-8, through every growth of the buffer.
 */

test('appended pieces read back as the UTF-8 of their text, past many growths, characters of every width', () => {
  const buffer = new CopyBuffer(16);
  let text = '';
  const pieces = ['a\tb\n', 'ñandú\t\\N\n', '€'.repeat(40), '😀 x\n', 'y'.repeat(70_000), ''];
  for (let round = 0; round < 30; round++) {
    for (const piece of pieces) {
      buffer.append(piece);
      text += piece;
    }
  }
  const expected = Buffer.from(text, 'utf8');
  assert.equal(buffer.byteLength, expected.byteLength);
  assert.ok(Buffer.from(buffer.view()).equals(expected));
});
