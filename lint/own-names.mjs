/**
 * An oxlint plugin (see .oxlintrc.json): no lookup by a name from a request, data or a stored item goes
 * through an object's prototype. Such a name ("constructor", "toString", "__proto__") finds a member every
 * object inherits, and written into a plain object "__proto__" replaces its prototype. Maps keyed by names
 * are `Map`s, or are read with `Object.hasOwn` (lib/domain/own.ts).
 *
 * It reads the syntax only, without types, so it flags what reads as a lookup by name: `no-name-in`,
 * `name in object` for any name that is not a literal; `no-lookup-by-name`, `object[name]` for a property
 * named like a name (`name`, `type`, `key`, `field`, `policy`, `scope`...). The second is on where names
 * from requests, data and stored items are handled (.oxlintrc.json), not where the names are the code's own.
 */
const NAME_LIKE = /(?:^|[a-z_])(?:name|type|key|field|policy|scope|header|param|label|attribute)s?$/i;

/** The last identifier of `name`, `job.type` or `input.retry.name`; undefined for anything else. */
function lastName(node) {
  if (node.type === 'Identifier') return node.name;
  if (node.type === 'MemberExpression' && !node.computed && node.property.type === 'Identifier') return node.property.name;
  if (node.type === 'ChainExpression') return lastName(node.expression);
  return undefined;
}

const isStringLiteral = (node) => node.type === 'Literal' && typeof node.value === 'string';

const noNameIn = {
  meta: { type: 'problem', docs: { description: 'no `name in object` for a name that is not a literal' } },
  create(context) {
    return {
      BinaryExpression(node) {
        if (node.operator === 'in' && !isStringLiteral(node.left)) {
          context.report({ node, message: '`name in object` finds inherited members ("constructor", "toString"): use Object.hasOwn, or a Map' });
        }
      },
    };
  },
};

const noLookupByName = {
  meta: { type: 'problem', docs: { description: 'no `object[name]`: a name is read with ownEntry or looked up in a Map' } },
  create(context) {
    return {
      MemberExpression(node) {
        if (!node.computed || node.property.type === 'Literal') return;
        const name = lastName(node.property);
        if (name !== undefined && NAME_LIKE.test(name)) {
          context.report({
            node,
            message: `\`object[${name}]\` reads an inherited member for a name like "constructor", and written replaces the prototype for "__proto__": use ownEntry (lib/domain/own.ts), or a Map`,
          });
        }
      },
    };
  },
};

export default { meta: { name: 'own-names' }, rules: { 'no-name-in': noNameIn, 'no-lookup-by-name': noLookupByName } };
