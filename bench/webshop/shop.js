// Helpers of artillery.yml: the loop's end (DURATION seconds after the
// first user's first step, so that Node's start-up is not counted as load
// time) and a search term from the preset's six, at random.
let deadline = 0;
const terms = ['mug', 'blue', 'lamp', 'red', 'book', 'white'];

function notDone(context, next) {
  if (deadline === 0) {
    deadline = Date.now() + 1000 * Number(process.env.DURATION || 10);
  }
  return next(Date.now() < deadline);
}

function pickTerm(context, events, done) {
  context.vars.term = terms[Math.floor(Math.random() * terms.length)];
  return done();
}

module.exports = { notDone, pickTerm };
