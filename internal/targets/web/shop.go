package web

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// The demo shop, under /shop/: the zero-setup target of the web-shop
// preset, an application small enough to read and real enough that a
// journey must behave like a user to get through it.
//
//	GET  /shop/            the home page (HTML), with links to the rest
//	GET  /shop/login       the log-in form (HTML)
//	POST /shop/login       user=NAME&password=demo: sets the session cookie
//	                       (HttpOnly, Path=/shop) and redirects (303) to
//	                       /shop/account; a wrong password is 401
//	GET  /shop/account     the account page (HTML): needs the session; its
//	                       check-out form holds the CSRF token as
//	                       <input type="hidden" name="csrf" value="...">
//	GET  /shop/products    the product list (JSON): {"products": [{"id", "name", "price"}]}
//	GET  /shop/search?q=T  the products whose name holds T (JSON), the same shape
//	POST /shop/cart        id=N: adds product N to the session's cart (JSON {"items": n}); needs the session
//	POST /shop/checkout    csrf=TOKEN (or the X-CSRF-Token header): places the order
//	                       (JSON {"order": "o-...", "items": n, "total": ...}) and empties the
//	                       cart; without the session 401, without the right token 403
//	                       {"error": "csrf"}, with an empty cart 409 {"error": "empty cart"}
//	GET  /shop/logout      ends the session, redirects to /shop/
//	GET  /shop/old         a permanent redirect (301) to /shop/
//	GET  /shop/loop        a redirect loop: /shop/loop -> /shop/loop2 -> /shop/loop
//
// Every password is "demo": the shop is a demonstration, never a place for
// a real secret. Sessions are kept in memory, at most MaxSessions (the
// oldest is forgotten first), so a long run does not grow it.
type shop struct {
	mu       sync.Mutex
	sessions map[string]*shopSession
	order    []string // session ids, oldest first (a ring once full)
	next     int
	orders   uint64
}

// MaxSessions bounds the shop's sessions.
const MaxSessions = 100_000

// ShopPassword is every demo user's password.
const ShopPassword = "demo"

type shopSession struct {
	mu   sync.Mutex
	user string
	csrf string
	cart []int
}

type product struct {
	ID    int     `json:"id"`
	Name  string  `json:"name"`
	Price float64 `json:"price"`
}

// products is the catalogue: 50 products whose names combine a few words,
// so a search for "mug" or "blue" finds several.
var products = func() []product {
	colors := []string{"red", "blue", "green", "black", "white"}
	things := []string{"mug", "shirt", "hat", "sock", "lamp", "chair", "book", "pen", "bag", "cup"}
	var out []product
	for i := range 50 {
		out = append(out, product{ID: i + 1, Name: colors[i%len(colors)] + " " + things[i/len(colors)], Price: float64(5+i%17) + 0.99})
	}
	return out
}()

func newShop() *shop { return &shop{sessions: map[string]*shopSession{}} }

func token() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

const sessionCookie = "shop_session"

// session returns the request's session, or nil.
func (s *shop) session(r *http.Request) *shopSession {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[c.Value]
}

func (s *shop) newSession(user string) (string, *shopSession) {
	id := token()
	ss := &shopSession{user: user, csrf: token()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.order) < MaxSessions {
		s.order = append(s.order, id)
	} else {
		delete(s.sessions, s.order[s.next])
		s.order[s.next] = id
		s.next = (s.next + 1) % MaxSessions
	}
	s.sessions[id] = ss
	return id, ss
}

func (s *shop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch p := strings.TrimPrefix(r.URL.Path, "/shop"); p {
	case "", "/":
		page(w, http.StatusOK, "Demo shop", `<p><a href="/shop/login">Log in</a> · <a href="/shop/products">Products</a> · <a href="/shop/search?q=mug">Search</a></p>`)
	case "/login":
		if r.Method == http.MethodPost {
			s.login(w, r)
			return
		}
		page(w, http.StatusOK, "Log in", `<form id="login" method="post" action="/shop/login"><input name="user"><input name="password" type="password"><button>Log in</button></form>`)
	case "/account":
		ss := s.session(r)
		if ss == nil {
			page(w, http.StatusUnauthorized, "Log in first", `<p><a href="/shop/login">Log in</a></p>`)
			return
		}
		ss.mu.Lock()
		n := len(ss.cart)
		ss.mu.Unlock()
		page(w, http.StatusOK, "Welcome, "+html.EscapeString(ss.user), fmt.Sprintf(
			`<p>Your cart holds <span id="items">%d</span> items.</p><form id="checkout" method="post" action="/shop/checkout"><input type="hidden" name="csrf" value="%s"><button>Check out</button></form>`, n, ss.csrf))
	case "/products":
		writeJSON(w, http.StatusOK, map[string]any{"products": products})
	case "/search":
		q := strings.ToLower(r.URL.Query().Get("q"))
		found := []product{}
		for _, p := range products {
			if q != "" && strings.Contains(p.Name, q) {
				found = append(found, p)
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"query": q, "products": found})
	case "/cart":
		s.cart(w, r)
	case "/checkout":
		s.checkout(w, r)
	case "/logout":
		if c, err := r.Cookie(sessionCookie); err == nil {
			s.mu.Lock()
			delete(s.sessions, c.Value)
			s.mu.Unlock()
		}
		http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/shop", MaxAge: -1})
		http.Redirect(w, r, "/shop/", http.StatusSeeOther)
	case "/old":
		http.Redirect(w, r, "/shop/", http.StatusMovedPermanently)
	case "/loop":
		http.Redirect(w, r, "/shop/loop2", http.StatusFound)
	case "/loop2":
		http.Redirect(w, r, "/shop/loop", http.StatusFound)
	default:
		http.NotFound(w, r)
	}
}

func (s *shop) login(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "bad form"})
		return
	}
	user := r.PostForm.Get("user")
	if user == "" || r.PostForm.Get("password") != ShopPassword {
		page(w, http.StatusUnauthorized, "Wrong user or password", `<p><a href="/shop/login">Try again</a></p>`)
		return
	}
	id, _ := s.newSession(user)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/shop", HttpOnly: true, SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, "/shop/account", http.StatusSeeOther)
}

func (s *shop) cart(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "POST a product id"})
		return
	}
	ss := s.session(r)
	if ss == nil {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "log in first"})
		return
	}
	r.ParseForm()
	id, err := strconv.Atoi(r.PostForm.Get("id"))
	if err != nil || id < 1 || id > len(products) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "no such product"})
		return
	}
	ss.mu.Lock()
	if len(ss.cart) < 1000 {
		ss.cart = append(ss.cart, id)
	}
	n := len(ss.cart)
	ss.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]int{"items": n})
}

func (s *shop) checkout(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "POST"})
		return
	}
	ss := s.session(r)
	if ss == nil {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "log in first"})
		return
	}
	r.ParseForm()
	tok := r.PostForm.Get("csrf")
	if tok == "" {
		tok = r.Header.Get("X-CSRF-Token")
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if tok != ss.csrf {
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "csrf"})
		return
	}
	if len(ss.cart) == 0 {
		writeJSON(w, http.StatusConflict, map[string]string{"error": "empty cart"})
		return
	}
	total := 0.0
	for _, id := range ss.cart {
		total += products[id-1].Price
	}
	s.mu.Lock()
	s.orders++
	n := s.orders
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"order": fmt.Sprintf("o-%d", n), "items": len(ss.cart), "total": float64(int(total*100)) / 100})
	ss.cart = ss.cart[:0]
}

func page(w http.ResponseWriter, status int, title, body string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!doctype html><html><head><title>%s</title></head><body><h1>%s</h1>%s</body></html>\n", html.EscapeString(title), html.EscapeString(title), body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
