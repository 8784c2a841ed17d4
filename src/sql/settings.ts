import type { Queryable } from '../db/database.js';

// The settings table: values of the server itself by name (today its secrets, base64url).

const INSERT_IF_ABSENT = 'INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING';

/** Stores the value under the name unless one is stored already: the first instance to insert wins. */
export async function storeSettingIfAbsent(db: Queryable, name: string, value: string): Promise<void> {
  await db.query(INSERT_IF_ABSENT, [name, value]);
}

const SELECT_SETTING = 'SELECT value FROM settings WHERE name = $1';

export async function storedSetting(db: Queryable, name: string): Promise<string | undefined> {
  const [row] = await db.query<{ value: string }>(SELECT_SETTING, [name]);
  return row?.value;
}
