// eln-check.mjs NODE_MODULES ROOT: reads an extracted .eln archive's root folder with programs
// nobody here wrote — the npm ro-crate library (loads the metadata, walks every File entity,
// validates the crate) and jcampconverter (parses every JCAMP-DX spectrum) — and prints what it
// found as one JSON object for cmd/hcp-edge's export test to judge.
import { createRequire } from 'node:module';
import { createHash } from 'node:crypto';
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [modules, root] = process.argv.slice(2);
const require = createRequire(join(modules, 'noop.js'));
const { ROCrate, validate } = require('ro-crate');
const { convert } = await import(pathToFileURL(join(modules, 'jcampconverter', 'dist', 'jcampconverter.js')).href);

const json = JSON.parse(readFileSync(join(root, 'ro-crate-metadata.json'), 'utf8'));
const crate = new ROCrate(json, { array: true, link: true });
const out = { root: crate.rootId, files: [], errors: [], spectra: [], validator: [], conformsTo: [], action: null };
const results = await validate(json);
out.validator = results.filter(r => r.status === 'error').map(r => r.message);
for (const c of crate.getEntity('ro-crate-metadata.json').conformsTo || []) out.conformsTo.push(c['@id']);
for (const e of crate.entities()) {
  const types = [].concat(e['@type']);
  if (types.includes('CreateAction')) {
    out.action = { id: e['@id'], startTime: [].concat(e.startTime)[0], endTime: [].concat(e.endTime)[0],
      status: [].concat(e.actionStatus)[0]?.['@id'], instrument: (e.instrument || []).map(i => i['@id']),
      result: (e.result || []).map(i => i['@id']), agent: (e.agent || []).map(i => i.name?.[0]) };
  }
  if (!types.includes('File')) continue;
  const id = e['@id'];
  const p = join(root, id);
  if (!existsSync(p)) { out.errors.push(`${id}: named in the metadata, not in the archive`); continue; }
  const data = readFileSync(p);
  const sha = createHash('sha256').update(data).digest('hex');
  const size = String(data.length);
  const want = { sha256: [].concat(e.sha256)[0], size: [].concat(e.contentSize)[0] };
  if (want.sha256 !== sha) out.errors.push(`${id}: sha256 ${sha}, metadata says ${want.sha256}`);
  if (want.size !== size) out.errors.push(`${id}: ${size} bytes, metadata says ${want.size}`);
  out.files.push({ id, size: data.length, type: [].concat(e.encodingFormat)[0] });
  if (id.endsWith('.jdx')) {
    const parsed = convert(data.toString('latin1'), { keepRecordsRegExp: /.*/ });
    const sp = parsed.flatten[0]?.spectra?.[0];
    if (!sp) { out.errors.push(`${id}: jcampconverter found no spectrum`); continue; }
    const info = parsed.flatten[0].info || {};
    out.spectra.push({ id, x: Array.from(sp.data.x), y: Array.from(sp.data.y), xUnits: sp.xUnits, yUnits: sp.yUnits,
      dataType: sp.dataType || info['DATA TYPE'], title: sp.title, integration: info['$INTEGRATION TIME MS'] });
  }
}
process.stdout.write(JSON.stringify(out));
