// tsc compiles only TypeScript: the SQL migrations travel to dist/ beside the code that reads them.
import { cpSync, rmSync } from 'node:fs';

rmSync('dist/db/migrations', { recursive: true, force: true });
cpSync('src/db/migrations', 'dist/db/migrations', { recursive: true });
